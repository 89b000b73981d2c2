"""Schemathesis hooks for scripts/schemathesis.sh (loaded through SCHEMATHESIS_HOOKS).

Every request of the run comes from an address of its own. `paperboy serve` limits wrong admin tokens per client
address (GuessGuard: five, then a backoff answering 429 to that address whatever token it sends, and over 100 wrong
tries a minute from all addresses, one). A contract run sends wrong tokens on purpose (the `ignored_auth` check's
probes, generated `Authorization` values), all from 127.0.0.1: before, the run with keys met 429 on most admin
operations after its first few cases, and tested nothing behind them. The script starts serve with
`--trusted-proxy 127.0.0.1`, and this module gives each request a distinct `X-Forwarded-For` (10.0.0.1, 10.0.0.2,
…), so each wrong token is its address's first and only one and the limiter never answers 429, while it stays on,
as in production.

The header is set where every request passes, `requests`' `HTTPAdapter.send`, not in a `before_call` hook:
schemathesis sends the `ignored_auth` check's probes (a case without its credentials, one with wrong ones) through
its transport directly, without `before_call`, and those are the wrong tokens that matter.
"""

import itertools
import threading

import requests.adapters

_addresses = itertools.count(1)
_lock = threading.Lock()


def _next_address() -> str:
    with _lock:
        n = next(_addresses)
    # 10.0.0.1 up to 10.255.255.255: 16 million requests before an address comes back (a run sends thousands).
    n = (n - 1) % 0xFFFFFF + 1
    return f"10.{n >> 16 & 0xFF}.{n >> 8 & 0xFF}.{n & 0xFF}"


def _from_own_address(send):
    def send_from_own_address(self, request, *args, **kwargs):
        request.headers["X-Forwarded-For"] = _next_address()
        return send(self, request, *args, **kwargs)

    send_from_own_address.paperboy_own_address = True
    return send_from_own_address


if not getattr(requests.adapters.HTTPAdapter.send, "paperboy_own_address", False):
    requests.adapters.HTTPAdapter.send = _from_own_address(requests.adapters.HTTPAdapter.send)
