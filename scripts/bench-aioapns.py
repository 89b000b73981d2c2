#!/usr/bin/env python3
"""Benchmark aioapns (the APNs client under Matrix's Sygnal) against Paperboy's APNs simulator.

What it measures
----------------
aioapns 4.0 sending N background notifications (apns-push-type: background,
apns-priority: 5, topic com.example.paperboy, the Paperboy edition payload) to
N distinct 64-hex device tokens, with token (JWT, ES256) authentication, at
most C notifications in flight (C asyncio worker tasks, each awaiting
`APNs.send_notification` one notification at a time).  After a short warm-up
(which also opens the connections and lets the simulator raise its stream
limit), it reports for the timed phase:

  * notifications/s  accepted notifications / wall-clock seconds
  * accepted, failed (non-200 answers, plus exceptions such as aioapns's
    MaxAttemptsExceeded), with the reasons
  * CPU seconds of this Python process per 100,000 notifications
    (resource.getrusage, user + system, timed phase only)
  * peak RSS of this Python process (ru_maxrss; includes the warm-up)
  * aioapns's pool settings (max_connections, max_connection_attempts), the
    connections it ended with and the stream permits each had left

`--sweep 100,500,1000` runs the whole measurement once per concurrency, each
in a fresh Python process (so CPU and peak RSS are per point, not
cumulative) and, when this script starts the simulator, against a fresh
simulator; it then reports the best point (highest notifications/s among the
points without failures, or the highest overall if every point failed some).

How aioapns is pointed at the simulator
---------------------------------------
aioapns has no endpoint option: the host and port it connects to (and sends
as the `host` header) are the class attributes APNS_SERVER / APNS_PORT of its
protocol class, chosen by the pool as `pool.protocol_class`.  This script
subclasses `aioapns.connection.APNsProductionClientProtocol`, overrides just
those two attributes with the simulator's loopback host and port, and assigns
the subclass to `client.pool.protocol_class` after constructing the client.
Nothing else in aioapns is patched: connection pooling, JWT signing, h2
framing and retries are the library's own.

aioapns only speaks TLS (its pools always pass an SSL context to
`loop.create_connection`), so the simulator must run with --tls-cert/--tls-key
(an https:// endpoint).  The SSL context is passed through aioapns's own
`ssl_context=` argument and VERIFIES the simulator's certificate against
--ca-file (default: Tests/APNsTests/Fixtures/simulator-cert.pem, whose SANs
include 127.0.0.1 and localhost); `--insecure` turns verification off
instead.  Like aioapns's default context, it offers no ALPN; the simulator
accepts h2 over TLS without it, as Apple's servers do.

aioapns's own logger is set to ERROR (see --log-level): at high concurrency
its pool logs a WARNING for every notification that finds every connection
busy, which would otherwise flood stderr and distort the CPU figures.  The
client is given a no-op err_func because this script counts failures itself.

Running it
----------
    pip install aioapns==4.0

    # Against a simulator you started (TLS; see `paperboy apns-sim --help`):
    python3 scripts/bench-aioapns.py --endpoint-url https://127.0.0.1:PORT \\
        --key-file KEY.p8 --key-id KEY1234567 --team-id TEAM123456 \\
        --topic com.example.paperboy -n 100000 --concurrency 1000 [--json]

    # Or let the script start and stop a simulator with a throwaway key and
    # the TLS fixture (binary from --simulator, $PAPERBOY_BIN, or
    # .build/release/paperboy):
    python3 scripts/bench-aioapns.py --simulator /tmp/paperboy-release \\
        -n 100000 --sweep 100,500,1000,2000,5000

Every run is bounded: at most N + warm-up notifications per point, and a
wall-clock limit for the whole script (--time-limit, default 600 s) after
which outstanding sends are cancelled and the partial result is reported
(marked timed_out).  Only loopback endpoints are accepted.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import ipaddress
import json
import os
import resource
import selectors
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.parse
from pathlib import Path
from typing import Any, Dict, List, Optional

try:
    import aioapns
    from aioapns import APNs, NotificationRequest, PushType
    from aioapns.connection import APNsProductionClientProtocol
except ImportError:  # pragma: no cover - depends on the environment
    sys.exit("bench-aioapns: aioapns is not installed: pip install aioapns==4.0")

REPO_ROOT = Path(__file__).resolve().parent.parent
FIXTURES = REPO_ROOT / "Tests" / "APNsTests" / "Fixtures"
DEFAULT_CERT = FIXTURES / "simulator-cert.pem"
DEFAULT_TLS_KEY = FIXTURES / "simulator-key.pem"
DEFAULT_BIN = REPO_ROOT / ".build" / "release" / "paperboy"

PAYLOAD = {
    "aps": {"content-available": 1},
    "edition": "2026-11-23-morning",
    "manifest": "https://cdn.example.com/e/2026-11-23-morning.json",
}

SIM_START_TIMEOUT = 20.0  # seconds to wait for "apns-sim listening on ..."
SIM_STOP_TIMEOUT = 20.0  # seconds to wait for the simulator's stats on SIGTERM
WARMUP_TIME_LIMIT = 60.0  # seconds the warm-up may take at most


def aioapns_version() -> str:
    try:
        from importlib.metadata import version

        return version("aioapns")
    except Exception:
        return getattr(aioapns, "__version__", "unknown")


# --------------------------------------------------------------------------
# Simulator management (only when --endpoint-url is not given)
# --------------------------------------------------------------------------


class Simulator:
    """A `paperboy apns-sim` child process serving TLS on a free loopback port."""

    def __init__(self, binary: str, key_file: str, key_id: str, team_id: str,
                 topic: str, cert: Path, tls_key: Path,
                 initial_max_streams: Optional[int]) -> None:
        self.cmd = [
            binary, "apns-sim", "--host", "127.0.0.1", "--port", "0",
            "--key-file", key_file, "--key-id", key_id, "--team-id", team_id,
            "--topic", topic, "--no-record", "--json",
            "--tls-cert", str(cert), "--tls-key", str(tls_key),
        ]
        if initial_max_streams is not None:
            self.cmd += ["--initial-max-concurrent-streams", str(initial_max_streams)]
        self.proc: Optional[subprocess.Popen] = None
        self.url: Optional[str] = None
        self.stats: Optional[Dict[str, Any]] = None

    def start(self) -> str:
        self.proc = subprocess.Popen(self.cmd, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        sel = selectors.DefaultSelector()
        sel.register(self.proc.stdout, selectors.EVENT_READ)
        deadline = time.monotonic() + SIM_START_TIMEOUT
        line = ""
        while time.monotonic() < deadline and not line.endswith("\n"):
            if not sel.select(timeout=max(0.0, deadline - time.monotonic())):
                break
            chunk = self.proc.stdout.readline()
            if not chunk:
                break
            line += chunk
        sel.close()
        prefix = "apns-sim listening on "
        if not line.startswith(prefix):
            err = ""
            if self.proc.poll() is not None:
                err = self.proc.stderr.read()
            self.stop()
            raise RuntimeError(f"simulator did not start ({line.strip()!r}) {err.strip()}")
        self.url = line[len(prefix):].strip()
        return self.url

    def stop(self) -> Optional[Dict[str, Any]]:
        if self.proc is None:
            return self.stats
        proc, self.proc = self.proc, None
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        try:
            out, _ = proc.communicate(timeout=SIM_STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate()
        start = out.find("{") if out else -1
        if start >= 0:
            try:
                self.stats = json.loads(out[start:])
            except json.JSONDecodeError:
                self.stats = None
        return self.stats


def write_throwaway_key(directory: str) -> str:
    """A fresh P-256 key in PKCS#8 PEM, the .p8 format APNs hands out."""
    path = os.path.join(directory, "AuthKey_bench.p8")
    openssl = shutil.which("openssl")
    if openssl:
        subprocess.run([openssl, "genpkey", "-algorithm", "EC", "-pkeyopt",
                        "ec_paramgen_curve:P-256", "-out", path],
                       check=True, capture_output=True, timeout=30)
    else:  # cryptography is a dependency of aioapns (via pyjwt/pyOpenSSL)
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import ec

        key = ec.generate_private_key(ec.SECP256R1())
        with open(path, "wb") as f:
            f.write(key.private_bytes(serialization.Encoding.PEM,
                                      serialization.PrivateFormat.PKCS8,
                                      serialization.NoEncryption()))
    return path


# --------------------------------------------------------------------------
# Pointing aioapns at the simulator
# --------------------------------------------------------------------------


def parse_endpoint(url: str) -> tuple:
    parsed = urllib.parse.urlsplit(url)
    if parsed.scheme != "https":
        raise SystemExit("bench-aioapns: aioapns only speaks TLS; give an https:// "
                         "endpoint (start apns-sim with --tls-cert/--tls-key)")
    host, port = parsed.hostname, parsed.port or 443
    if host != "localhost":
        try:
            loopback = ipaddress.ip_address(host).is_loopback
        except ValueError:
            loopback = False
        if not loopback:
            raise SystemExit(f"bench-aioapns: refusing non-loopback endpoint {host!r}")
    return host, port


def make_ssl_context(ca_file: Optional[str], insecure: bool) -> ssl.SSLContext:
    if insecure:
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        return ctx
    return ssl.create_default_context(cafile=ca_file)


def make_client(host: str, port: int, ctx: ssl.SSLContext, key: str, key_id: str,
                team_id: str, topic: str, max_connections: int,
                max_attempts: int) -> APNs:
    """An aioapns client whose connections go to host:port instead of Apple."""

    class SimulatorProtocol(APNsProductionClientProtocol):
        APNS_SERVER = host
        APNS_PORT = port

    async def ignore_error(_request, _result) -> None:
        return None  # failures are counted by the caller

    client = APNs(key=key, key_id=key_id, team_id=team_id, topic=topic,
                  max_connections=max_connections,
                  max_connection_attempts=max_attempts,
                  ssl_context=ctx, err_func=ignore_error)
    client.pool.protocol_class = SimulatorProtocol
    return client


# --------------------------------------------------------------------------
# One measurement
# --------------------------------------------------------------------------


class Tally:
    def __init__(self) -> None:
        self.accepted = 0
        self.failed = 0
        self.reasons: collections.Counter = collections.Counter()


async def send_batch(client: APNs, first_token: int, count: int, concurrency: int,
                     tally: Tally, time_limit: float) -> bool:
    """Send `count` notifications, at most `concurrency` in flight.

    Returns False if the time limit cut the batch short (outstanding sends
    are cancelled and not counted)."""
    next_index = first_token
    end = first_token + count

    async def worker() -> None:
        nonlocal next_index
        while next_index < end:
            token = f"{next_index:064x}"
            next_index += 1
            request = NotificationRequest(device_token=token, message=PAYLOAD,
                                          priority=5, push_type=PushType.BACKGROUND)
            try:
                result = await client.send_notification(request)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # MaxAttemptsExceeded, ConnectionClosed, ...
                tally.failed += 1
                tally.reasons[type(exc).__name__] += 1
                continue
            if result.is_successful:
                tally.accepted += 1
            else:
                tally.failed += 1
                tally.reasons[f"{result.status} {result.description}"] += 1

    workers = [asyncio.create_task(worker()) for _ in range(min(concurrency, count))]
    done, pending = await asyncio.wait(workers, timeout=max(0.0, time_limit))
    for task in pending:
        task.cancel()
    if pending:
        await asyncio.gather(*pending, return_exceptions=True)
    for task in done:
        if task.exception() is not None:  # a bug in this script, not a send failure
            raise task.exception()
    return not pending


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def measure(args: argparse.Namespace, endpoint: str, deadline: float,
                  token_base: int) -> Dict[str, Any]:
    host, port = parse_endpoint(endpoint)
    ctx = make_ssl_context(args.ca_file, args.insecure)
    with open(args.key_file) as f:
        key = f.read()
    client = make_client(host, port, ctx, key, args.key_id, args.team_id, args.topic,
                         args.max_connections, args.max_connection_attempts)
    try:
        warm = Tally()
        warm_ok = await send_batch(client, token_base, args.warmup, args.concurrency, warm,
                                   min(WARMUP_TIME_LIMIT, deadline - time.monotonic()))
        if args.warmup and warm.accepted == 0:
            raise RuntimeError(f"warm-up: nothing accepted ({dict(warm.reasons)})")

        tally = Tally()
        cpu0, t0 = cpu_seconds(), time.perf_counter()
        finished = await send_batch(client, token_base + args.warmup, args.n,
                                    args.concurrency, tally, deadline - time.monotonic())
        elapsed = time.perf_counter() - t0
        cpu = cpu_seconds() - cpu0
        connections = list(client.pool.connections)
    finally:
        client.pool.close()
        await asyncio.sleep(0.1)  # let the transports close

    completed = tally.accepted + tally.failed
    return {
        "client": "aioapns",
        "aioapns_version": aioapns_version(),
        "python": sys.version.split()[0],
        "endpoint": endpoint,
        "tls_verify": not args.insecure,
        "n": args.n,
        "warmup": args.warmup,
        "warmup_completed": warm_ok,
        "concurrency": args.concurrency,
        "max_connections": args.max_connections,
        "max_connection_attempts": args.max_connection_attempts,
        "completed": completed,
        "accepted": tally.accepted,
        "failed": tally.failed,
        "failure_reasons": dict(tally.reasons),
        "timed_out": not finished,
        "seconds": round(elapsed, 3),
        "notifications_per_second": round(tally.accepted / elapsed, 1) if elapsed > 0 else 0.0,
        "cpu_seconds": round(cpu, 3),
        "cpu_seconds_per_100k": round(cpu * 100_000 / completed, 2) if completed else None,
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "pool_connections_at_end": len(connections),
        # Stream permits aioapns's per-connection semaphore held once idle: the
        # most streams it would put on each connection at once.
        "stream_permits_per_connection": [c.free_channels._value for c in connections],
    }


def run_single(args: argparse.Namespace, deadline: float) -> Dict[str, Any]:
    sim: Optional[Simulator] = None
    tmp = None
    result: Optional[Dict[str, Any]] = None
    try:
        endpoint = args.endpoint_url
        if endpoint is None:
            binary = args.simulator or os.environ.get("PAPERBOY_BIN") or str(DEFAULT_BIN)
            if not os.access(binary, os.X_OK):
                raise SystemExit(f"bench-aioapns: simulator binary {binary!r} not found "
                                 "(use --simulator or $PAPERBOY_BIN)")
            if args.key_file is None:
                tmp = tempfile.TemporaryDirectory(prefix="bench-aioapns-")
                args.key_file = write_throwaway_key(tmp.name)
            sim = Simulator(binary, args.key_file, args.key_id, args.team_id, args.topic,
                            DEFAULT_CERT, DEFAULT_TLS_KEY, args.sim_initial_max_streams)
            endpoint = sim.start()
        elif args.key_file is None:
            raise SystemExit("bench-aioapns: --endpoint-url needs --key-file "
                             "(the key the simulator was started with)")
        result = asyncio.run(measure(args, endpoint, deadline, args.token_base))
    finally:
        if sim is not None:
            stats = sim.stop()
            if stats is not None and result is not None:
                result["simulator"] = {k: stats.get(k) for k in (
                    "accepted", "rejected", "connectionsOpened", "peakConcurrentStreams",
                    "streamLimitViolations", "goAwaysSent", "connectionsDropped")}
        if tmp is not None:
            tmp.cleanup()
    return result


# --------------------------------------------------------------------------
# Sweep: one child process per concurrency
# --------------------------------------------------------------------------


def child_argv(args: argparse.Namespace, concurrency: int, time_limit: float,
               token_base: int) -> List[str]:
    argv = [sys.executable, str(Path(__file__).resolve()), "--json",
            "-n", str(args.n), "--warmup", str(args.warmup),
            "--concurrency", str(concurrency),
            "--max-connections", str(args.max_connections),
            "--max-connection-attempts", str(args.max_connection_attempts),
            "--key-id", args.key_id, "--team-id", args.team_id, "--topic", args.topic,
            "--time-limit", f"{time_limit:.1f}", "--token-base", str(token_base),
            "--log-level", args.log_level]
    for flag, value in (("--endpoint-url", args.endpoint_url), ("--key-file", args.key_file),
                        ("--ca-file", args.ca_file), ("--simulator", args.simulator),
                        ("--sim-initial-max-streams", args.sim_initial_max_streams)):
        if value is not None:
            argv += [flag, str(value)]
    if args.insecure:
        argv.append("--insecure")
    return argv


def run_sweep(args: argparse.Namespace, concurrencies: List[int],
              deadline: float) -> Dict[str, Any]:
    points: List[Dict[str, Any]] = []
    for index, concurrency in enumerate(concurrencies):
        remaining = deadline - time.monotonic()
        if remaining < 5:
            print(f"bench-aioapns: time limit reached; skipping concurrency {concurrency}",
                  file=sys.stderr)
            break
        # Each point gets an equal share of what is left (at least 30 s).
        share = max(30.0, remaining / (len(concurrencies) - index))
        share = min(share, remaining)
        if not args.json:
            print(f"... concurrency {concurrency} (limit {share:.0f} s)", file=sys.stderr)
        token_base = args.token_base + index * (args.n + args.warmup)
        try:
            proc = subprocess.run(child_argv(args, concurrency, share - 2, token_base),
                                  capture_output=True, text=True, timeout=share + 30)
        except subprocess.TimeoutExpired:
            points.append({"concurrency": concurrency, "error": "child timed out"})
            continue
        try:
            points.append(json.loads(proc.stdout))
        except json.JSONDecodeError:
            points.append({"concurrency": concurrency,
                           "error": (proc.stderr or proc.stdout).strip()[-500:]})
        if proc.stderr.strip() and not args.json:
            sys.stderr.write(proc.stderr[-2000:])
    measured = [p for p in points if "error" not in p]
    clean = [p for p in measured if p["failed"] == 0 and not p["timed_out"]]
    best = max(clean or measured, key=lambda p: p["notifications_per_second"], default=None)
    return {"client": "aioapns", "aioapns_version": aioapns_version(),
            "n": args.n, "max_connections": args.max_connections,
            "max_connection_attempts": args.max_connection_attempts,
            "points": points,
            "best_concurrency": best["concurrency"] if best else None,
            "best": best}


# --------------------------------------------------------------------------
# Output and CLI
# --------------------------------------------------------------------------


def print_point(r: Dict[str, Any]) -> None:
    print(f"aioapns {r['aioapns_version']} -> {r['endpoint']} "
          f"(TLS, verify={'on' if r['tls_verify'] else 'off'})")
    print(f"  notifications        {r['n']} (+{r['warmup']} warm-up), "
          f"concurrency {r['concurrency']}")
    print(f"  aioapns pool         max_connections={r['max_connections']}, "
          f"max_connection_attempts={r['max_connection_attempts']}, "
          f"{r['pool_connections_at_end']} connections at end, stream permits "
          f"{r['stream_permits_per_connection']}")
    print(f"  notifications/s      {r['notifications_per_second']:.0f}"
          f"{'  (TIMED OUT: partial)' if r['timed_out'] else ''}")
    print(f"  accepted / failed    {r['accepted']} / {r['failed']} {r['failure_reasons'] or ''}")
    print(f"  seconds              {r['seconds']}")
    print(f"  CPU s / 100k         {r['cpu_seconds_per_100k']}  (python process)")
    print(f"  peak RSS             {r['peak_rss_mib']} MiB")
    if "simulator" in r:
        print(f"  simulator            {r['simulator']}")


def print_sweep(s: Dict[str, Any]) -> None:
    print(f"aioapns {s['aioapns_version']}: n={s['n']}, max_connections={s['max_connections']}, "
          f"max_connection_attempts={s['max_connection_attempts']}")
    print(f"{'concurrency':>11} {'notif/s':>9} {'accepted':>9} {'failed':>7} "
          f"{'CPU s/100k':>10} {'RSS MiB':>8} {'conns':>5}  note")
    for p in s["points"]:
        if "error" in p:
            print(f"{p['concurrency']:>11}  error: {p['error']}")
            continue
        note = "timed out" if p["timed_out"] else ""
        if p["failure_reasons"]:
            note += f" {p['failure_reasons']}"
        print(f"{p['concurrency']:>11} {p['notifications_per_second']:>9.0f} "
              f"{p['accepted']:>9} {p['failed']:>7} {p['cpu_seconds_per_100k']:>10} "
              f"{p['peak_rss_mib']:>8} {p['pool_connections_at_end']:>5}  {note}")
    if s["best"]:
        print(f"best: concurrency {s['best_concurrency']} -> "
              f"{s['best']['notifications_per_second']:.0f} notifications/s")


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description="Benchmark aioapns against Paperboy's APNs simulator "
                    "(see the docstring at the top of this file).")
    p.add_argument("--endpoint-url", help="https://127.0.0.1:PORT of a running apns-sim; "
                   "without it the script starts one")
    p.add_argument("--simulator", help="paperboy binary to start "
                   "(default $PAPERBOY_BIN, else .build/release/paperboy)")
    p.add_argument("--key-file", help="the .p8 provider-token key (default: a throwaway "
                   "key, only when the script starts the simulator)")
    p.add_argument("--key-id", default="KEY1234567")
    p.add_argument("--team-id", default="TEAM123456")
    p.add_argument("--topic", default="com.example.paperboy")
    p.add_argument("-n", type=int, default=100_000, help="timed notifications (default 100000)")
    p.add_argument("--warmup", type=int, default=2_000,
                   help="untimed notifications first (default 2000)")
    p.add_argument("--concurrency", type=int, default=1_000,
                   help="notifications in flight at most (default 1000)")
    p.add_argument("--sweep", help="comma-separated concurrencies, e.g. 100,500,1000,5000")
    p.add_argument("--max-connections", type=int, default=10,
                   help="aioapns APNs(max_connections=): pool size (default 10, "
                        "aioapns's and Sygnal's)")
    p.add_argument("--max-connection-attempts", type=int, default=3,
                   help="aioapns pool.max_connection_attempts: tries per notification "
                        "(default 3, what Sygnal sets)")
    p.add_argument("--ca-file", help="PEM to trust for the simulator's certificate "
                   f"(default {DEFAULT_CERT.relative_to(REPO_ROOT)})")
    p.add_argument("--insecure", action="store_true",
                   help="do not verify the simulator's certificate")
    p.add_argument("--sim-initial-max-streams", type=int,
                   help="pass --initial-max-concurrent-streams to a simulator this "
                        "script starts (default: the simulator's, 1, as Apple does)")
    p.add_argument("--time-limit", type=float, default=600.0,
                   help="wall-clock seconds for the whole script (default 600)")
    p.add_argument("--token-base", type=int, default=1, help=argparse.SUPPRESS)
    p.add_argument("--log-level", default="ERROR", help="level of aioapns's logger")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    args = p.parse_args(argv)
    if args.n < 1 or args.warmup < 0 or args.concurrency < 1 or args.max_connections < 1:
        p.error("-n, --concurrency and --max-connections must be positive, --warmup >= 0")
    if args.n + args.warmup > 10_000_000:
        p.error("at most 10,000,000 notifications per point")
    if args.ca_file is None and not args.insecure:
        args.ca_file = str(DEFAULT_CERT)
    return args


def main(argv: Optional[List[str]] = None) -> int:
    args = parse_args(argv)
    import logging

    logging.getLogger("aioapns").setLevel(args.log_level.upper())
    deadline = time.monotonic() + args.time_limit

    if args.sweep:
        try:
            concurrencies = [int(c) for c in args.sweep.split(",") if c.strip()]
        except ValueError:
            raise SystemExit(f"bench-aioapns: bad --sweep {args.sweep!r}")
        if not concurrencies or min(concurrencies) < 1:
            raise SystemExit("bench-aioapns: --sweep needs positive concurrencies")
        summary = run_sweep(args, concurrencies, deadline)
        if args.json:
            print(json.dumps(summary))
        else:
            print_sweep(summary)
        return 0 if summary["best"] else 1

    result = run_single(args, deadline)
    if args.json:
        print(json.dumps(result))
    else:
        print_point(result)
    return 0 if result["accepted"] else 1


if __name__ == "__main__":
    sys.exit(main())
