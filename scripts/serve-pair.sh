# Sourced by the scripts that compare two builds' `serve` side by side (bench-status-pair.sh, bench-status-cost.sh):
# `start_serve_pair BINARY_A BINARY_B` starts `serve --no-dispatch` of each on a free loopback port with a fresh
# PAPERBOY_ADMIN_TOKEN (exported), waits until both are ready, and sets port_a, port_b, serve_a, serve_b (their pids)
# and work (a directory removed on exit, with their logs). Both are stopped when the script exits.
start_serve_pair() {
    PAPERBOY_ADMIN_TOKEN=$(openssl rand -hex 32)
    export PAPERBOY_ADMIN_TOKEN
    free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
    port_a=$(free_port) port_b=$(free_port)
    work=$(mktemp -d)
    LOG_LEVEL=warning "$1" serve --port "$port_a" --no-dispatch > "$work/serve-a.log" 2>&1 &
    serve_a=$!
    LOG_LEVEL=warning "$2" serve --port "$port_b" --no-dispatch > "$work/serve-b.log" 2>&1 &
    serve_b=$!
    trap 'kill $serve_a $serve_b 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT
    local ready=""
    for _ in $(seq 100); do
        if curl -fs "http://127.0.0.1:$port_a/health/ready" >/dev/null && curl -fs "http://127.0.0.1:$port_b/health/ready" >/dev/null; then
            ready=yes
            break
        fi
        sleep 0.2
    done
    [ -n "$ready" ] || { echo "$(basename "$0"): the two serves were not ready in 20 s; their logs:" >&2; cat "$work"/serve-*.log >&2; exit 1; }
}
