#!/usr/bin/env bash
# Runs a command with DATABASE_URL pointing at a throwaway PostgreSQL cluster (fsync off: benchmarks
# and measurements only), then removes the cluster. Usage: scripts/with-postgres.sh COMMAND [ARGS...]
set -euo pipefail
bin=${PAPERBOY_PG_BIN:-$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)}
dir=$(mktemp -d /tmp/paperboy-bench-pg-XXXXXX)
as=()
if [ "$(id -u)" = 0 ]; then chown postgres:postgres "$dir"; as=(runuser -u postgres --); fi
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cleanup() { (cd / && "${as[@]}" "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null 2>&1) || true; rm -rf "$dir"; }
trap cleanup EXIT
(cd / && "${as[@]}" "$bin/initdb" -D "$dir/data" -U postgres --auth=trust --no-sync >/dev/null)
# pg_stat_statements (Debian's postgresql-contrib) when installed: the benchmarks read each statement's cost from it.
statements=""
if [ -e "$("$bin/pg_config" --pkglibdir 2>/dev/null || echo "$bin/../lib")/pg_stat_statements.so" ]; then
    statements="-c shared_preload_libraries=pg_stat_statements -c pg_stat_statements.track=top -c pg_stat_statements.track_planning=on -c pg_stat_statements.max=10000"
fi
(cd / && "${as[@]}" "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -o \
    "-p $port -k $dir -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c max_connections=200 -c shared_buffers=512MB $statements" start >/dev/null)
psql -X -q -h 127.0.0.1 -p "$port" -U postgres -d postgres -c 'CREATE DATABASE paperboy'
[ -z "$statements" ] || psql -X -q -h 127.0.0.1 -p "$port" -U postgres -d paperboy -c 'CREATE EXTENSION pg_stat_statements'
export DATABASE_URL="postgres://postgres@127.0.0.1:$port/paperboy?sslmode=disable"
export PGHOST=127.0.0.1 PGPORT=$port PGUSER=postgres PGDATABASE=paperboy
"$@"
