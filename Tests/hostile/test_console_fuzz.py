"""A property-based fuzzer over every console route's parameters (issue 48, item 1), against a live `paperboy serve`.

Tests/hostile/run.sh starts the server (the same one test_hostile.py ran against, after it) and exports what this
reads. For each route under /console, hypothesis draws values for every parameter the route's handler reads (query
parameters, the path's id or name, the form fields of its POST) from a mix of huge, tiny, negative, zero, NaN and
infinite numbers, non-numeric text, unicode (right-to-left marks, emoji, combining marks, NUL, lone surrogates and
overlong or truncated UTF-8, percent-encoded), strings up to about 8 KB, empty values, repeated parameters and
malformed percent-encoding, UUIDs and near-UUIDs; usually one or two parameters hostile and the others valid, so that
the handler reads past its first check. Sessions come from the real sign-in form (a viewer's and an operator's),
never from forged cookies; POSTs carry the session's real CSRF token unless the token is what is fuzzed.

Properties of every request:
- the status is never 5xx (a refused value is a 4xx page, a 400 naming the field at fault; else 200 or a redirect);
- the server process is alive after it;
- it is answered within REQUEST_BOUND seconds;
- the server's resident memory (VmRSS) stays within RSS_GROWTH_BOUND of what it was when the fuzzer began.

Seeds are derandomized: CI sends the same requests on every run. The number of requests per route and in all is
printed at the end.
"""

import html
import itertools
import os
import re
import socket
import subprocess
import time
import urllib.parse
from collections import Counter

import http.client
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

HOST = "127.0.0.1"
PORT = int(os.environ["HOSTILE_PORT"])
ORIGIN = f"http://{HOST}:{PORT}"
OPERATOR = os.environ["HOSTILE_OPERATOR_TOKEN"]
VIEWER = os.environ["HOSTILE_VIEWER_TOKEN"]
BROADCAST = os.environ["HOSTILE_BROADCAST_ID"]
EDITION = os.environ["HOSTILE_EDITION_ID"]
SERVER_PID = int(os.environ["HOSTILE_SERVER_PID"])
DATABASE_URL = os.environ["DATABASE_URL"]
# Set to a file to get one line per request (route, status, milliseconds, the page's message, the request): to see
# what the fuzzer reaches.
TRACE = open(os.environ["HOSTILE_FUZZ_TRACE"], "a") if os.environ.get("HOSTILE_FUZZ_TRACE") else None

# Each request is answered within this many seconds, body included. The debug build, alone on two cores, answers
# the slowest request of the run in about 50 ms (a plan page or a broadcast's page); with two other suites
# running on the same two cores (load 5) the slowest took 2.5 s, scheduling delays all. 5 s holds there and by 100x
# alone, and still catches a request that computes or waits for seconds (a plan over 1e300 seconds, a chart of a
# billion bars, a lock, a retry loop).
REQUEST_BOUND = 5.0
# The server's VmRSS may grow by at most this much over the whole fuzz run. The debug server holds about 60 MB when
# the fuzzer begins and about 80 MB at its peak; its caches are bounded (plan counts 256 entries, wake rates 100,
# sign-in guesses 100,000 addresses), so growth past 200 MB is a leak or a request that buffers what it should not.
RSS_GROWTH_BOUND = 200 * 1024 * 1024
# Stops a hung request from holding CI; anything near it fails the time bound anyway.
SOCKET_TIMEOUT = 30.0

# Addresses of their own (test_hostile.py uses 10.0.0.0/8): each request is a client the server has not seen.
addresses = (f"100.{a}.{b}.{c}" for a, b, c in itertools.product(range(64, 128), range(256), range(1, 255)))

REQUESTS = Counter()
STATUSES = Counter()
SLOWEST = {}
RSS = {"baseline": None, "peak": 0}


# --- The server process.


def rss_bytes():
    with open(f"/proc/{SERVER_PID}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("the server's /proc status has no VmRSS")


def check_server_alive(repro):
    try:
        with open(f"/proc/{SERVER_PID}/stat") as stat:
            state = stat.read().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        raise AssertionError(f"the server (pid {SERVER_PID}) is gone after {repro}")
    assert state not in ("Z", "X"), f"the server (pid {SERVER_PID}) died (state {state}) after {repro}"


# --- Requests, made by hand: the fuzzer sends request targets http.client would refuse (raw UTF-8, bad escapes).


class Answer:
    def __init__(self, status, headers, body, elapsed, repro):
        self.status, self.headers, self.body, self.elapsed, self.repro = status, headers, body, elapsed, repro

    @property
    def text(self):
        return self.body.decode("utf-8", "replace")

    def message(self):
        """The message of an error page (message.mustache), or the page's error paragraph."""
        found = re.search(r'<p class="message error"[^>]*>(.*?)</p>', self.text, re.S)
        return html.unescape(found.group(1)) if found else ""


def send(route, method, target, headers=None, body=None, *, address=None, count=True):
    """One request on a connection of its own, from an address of its own; the properties checked on every answer."""
    if isinstance(target, str):
        target = target.encode()
    if isinstance(body, str):
        body = body.encode()
    lines = [method.encode() + b" " + target + b" HTTP/1.1", f"Host: {HOST}:{PORT}".encode(), b"Connection: close"]
    lines.append(f"X-Forwarded-For: {address or next(addresses)}".encode())
    for name, value in (headers or {}).items():
        lines.append(f"{name}: {value}".encode())
    if body is not None:
        lines.append(f"Content-Length: {len(body)}".encode())
    raw = b"\r\n".join(lines) + b"\r\n\r\n" + (body or b"")
    repro = describe(method, target, headers, body)
    started = time.monotonic()
    sock = socket.create_connection((HOST, PORT), timeout=SOCKET_TIMEOUT)
    try:
        sock.sendall(raw)
        response = http.client.HTTPResponse(sock, method=method)
        try:
            response.begin()
            headers_in = {k.lower(): v for k, v in response.getheaders()}
            if headers_in.get("content-type", "").startswith("text/event-stream"):
                # A live page's stream: its first event is enough; closing ends it.
                data = response.read1(4096) if response.status == 200 else response.read()
            else:
                data = response.read()
        except (socket.timeout, TimeoutError):
            raise AssertionError(f"no answer within {SOCKET_TIMEOUT} s: {repro}")
        except (ConnectionError, http.client.HTTPException) as error:
            check_server_alive(repro)
            raise AssertionError(f"the connection failed ({error!r}): {repro}")
        elapsed = time.monotonic() - started
    finally:
        sock.close()
    answer = Answer(response.status, headers_in, data, elapsed, repro)
    answer.raw_target = any(byte >= 0x80 for byte in target)
    if TRACE:
        print(route, answer.status, f"{elapsed * 1000:.0f}ms", repr(answer.message()[:160]), repro[:400], sep="\t", file=TRACE, flush=True)
    if count:
        REQUESTS[route] += 1
        STATUSES[answer.status // 100 * 100] += 1
        if elapsed > SLOWEST.get(route, (0, ""))[0]:
            SLOWEST[route] = (elapsed, repro)
    check_server_alive(repro)
    assert answer.status < 500, f"{answer.status} for {repro}: {answer.message() or answer.text[:300]!r}"
    assert elapsed < REQUEST_BOUND, f"{elapsed:.2f} s (bound {REQUEST_BOUND} s) for {repro}"
    rss = rss_bytes()
    RSS["peak"] = max(RSS["peak"], rss)
    if RSS["baseline"] is not None:
        grown = rss - RSS["baseline"]
        assert grown < RSS_GROWTH_BOUND, f"the server's RSS grew by {grown / 2**20:.0f} MB (bound {RSS_GROWTH_BOUND / 2**20:.0f} MB), last {repro}"
    return answer


def describe(method, target, headers, body):
    """The request as a curl command that repeats it (cookie and CSRF token abbreviated)."""
    parts = [f"curl -X {method} --path-as-is -g"]
    for name, value in (headers or {}).items():
        if name == "Cookie":
            value = value[:24] + "…"
        parts.append(f"-H '{name}: {value}'")
    if body is not None:
        shown = body if len(body) <= 600 else body[:600] + b"...(%d bytes)" % len(body)
        parts.append("--data-binary " + repr(shown.decode("utf-8", "backslashreplace")))
    shown = target if len(target) <= 600 else target[:600] + b"...(%d bytes)" % len(target)
    parts.append(repr(ORIGIN + shown.decode("utf-8", "backslashreplace")))
    return " ".join(parts)


# --- Sessions from the real sign-in form.

FORM_HEADERS = {"Content-Type": "application/x-www-form-urlencoded", "Origin": ORIGIN, "Sec-Fetch-Site": "same-origin"}


class Session:
    """A console session as a browser gets it: the sign-in form's fields posted with a token, the cookie the server
    sets, and the CSRF token its pages carry. Signed in again when a request ended it (sign-out, sign out everyone)."""

    def __init__(self, role, token):
        self.role, self.token = role, token
        self.cookie = self.csrf = None
        self.sign_in()

    def sign_in(self):
        page = send("setup", "GET", "/console/sign-in", count=False)
        assert page.status == 200, f"the sign-in page: {page.status}"
        fields = re.findall(r'<input[^>]*\bname="([^"]+)"', page.text)
        assert "token" in fields, f"the sign-in form has no token field: {fields}"
        values = {name: "" for name in fields}
        values.update(token=self.token, name=f"fuzzer ({self.role})")
        answer = send("setup", "POST", "/console/sign-in", FORM_HEADERS, urllib.parse.urlencode(values), count=False)
        assert answer.status == 303, f"sign-in as {self.role}: {answer.status} {answer.message()}"
        self.cookie = answer.headers["set-cookie"].split(";")[0]
        # The device page is the cheapest page with a form (the broadcasts list grows with what the fuzzer starts).
        page = send("setup", "GET", "/console/devices", {"Cookie": self.cookie}, count=False)
        assert page.status == 200, f"the device page after signing in: {page.status}"
        self.csrf = re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)

    def headers(self, form=False):
        headers = {"Cookie": self.cookie}
        if form:
            headers.update(FORM_HEADERS)
        return headers

    def renewed(self, answer):
        """Keeps the renewed cookie a response sets (the idle time restarts at most once a minute)."""
        cookie = answer.headers.get("set-cookie", "").split(";")[0]
        name, _, value = cookie.partition("=")
        if value and name == self.cookie.split("=")[0]:
            self.cookie = cookie


SESSIONS = {"operator": Session("operator", OPERATOR), "viewer": Session("viewer", VIEWER)}


def psql(sql):
    return subprocess.run(["psql", DATABASE_URL, "-XAtq", "-c", sql], check=True, capture_output=True, text=True).stdout.split()


PUBLICATION = psql("SELECT id FROM publications WHERE slug = 'morning'")[0]
DEVICE_TOKENS = psql("SELECT encode(token, 'hex') FROM devices WHERE provider = 0 ORDER BY id LIMIT 3")
# Broadcasts known to exist: the suite's, and any the fuzzer starts (the start form's redirect names them).
BROADCASTS = [BROADCAST]


def static_names():
    page = send("setup", "GET", "/console/broadcasts", SESSIONS["viewer"].headers(), count=False)
    return sorted(set(re.findall(r'/console/static/([^"?]+)"', page.text)))


STATIC_NAMES = static_names()
assert STATIC_NAMES, "the pages link no static files"


class Summary:
    """Prints, after the run, the requests made per route and in all, the slowest of each, and the server's memory."""

    def __init__(self):
        self.started = time.monotonic()

    def pytest_terminal_summary(self, terminalreporter):
        took = time.monotonic() - self.started
        statuses = ", ".join(f"{status // 100}xx {count}" for status, count in sorted(STATUSES.items()))
        terminalreporter.write_sep("-", f"console fuzz: {sum(REQUESTS.values())} requests in {took:.1f} s ({statuses})")
        for route, count in sorted(REQUESTS.items()):
            slowest = SLOWEST.get(route, (0, ""))[0]
            terminalreporter.write_line(f"{route}: {count} requests, slowest {slowest * 1000:.0f} ms")
        if RSS["baseline"]:
            terminalreporter.write_line(f"server RSS: {RSS['baseline'] / 2**20:.0f} MB at the start, peak {RSS['peak'] / 2**20:.0f} MB")
        if SLOWEST:
            took, repro = max(SLOWEST.values())
            terminalreporter.write_line(f"slowest request ({took * 1000:.0f} ms): {repro[:300]}")


@pytest.fixture(scope="session", autouse=True)
def summary(request):
    """The memory baseline before the first case; the summary after the last."""
    RSS["baseline"] = rss_bytes()
    request.config.pluginmanager.register(Summary(), "console-fuzz-summary")
    yield


# --- Values.


class Pre(bytes):
    """Bytes that go into a query or form as they are: already escaped, or malformed on purpose."""


NUMBERS = [
    "0", "-0", "00", "1", "-1", "2", "-2", "3", "16", "30", "31", "100", "101", "1023", "1024", "1025", "-1024",
    "1e300", "-1e300", "9e18", "-9e18", str(2**63), str(2**63 - 1), str(-(2**63)), str(-(2**63) - 1), str(2**64),
    str(2**64 - 1), "1e-300", "5e-324", "4.9e-324", "2.5e-324", "2.2250738585072014e-308", "1.7976931348623157e308",
    "1e309", "-1e309", "NaN", "nan", "-nan", "NAN", "snan", "inf", "-inf", "+inf", "Infinity", "-Infinity", "INF",
    "0x10", "0x7fffffffffffffff", "0b1", "0o7", "0x1p1023", "1_000", "1,000", "1.000,5", "+1", " 1", "1 ", "\t1",
    "1\n", "0.5", ".5", "5.", "1.", "-.5", "1e", "e5", "1e+", "1e-", "--1", "+-1", ".", "-", "+", "٣", "١٢", "１２",
    "½", "Ⅻ", "𝟗", "⁹", "1" + "0" * 400, "0." + "0" * 400 + "1", "9" * 20, "-" + "9" * 20,
]
TEXT = [
    "", " ", "  ", "abc", "null", "None", "undefined", "true", "false", "on", "off", "auto", "[]", "{}", "[1]",
    '{"a":1}', "<script>alert(1)</script>", "\"><svg onload=alert(1)>", "' OR 1=1 --", "'; DROP TABLE broadcasts; --",
    "%s%s%n", "{{frame.csrf}}", "{{{x}}}", "${jndi:ldap://x}", "../../etc/passwd", "..", ".", "/", "\\", "C:\\",
    "\u202eevil\u202c", "\u200f\u05e9\u05dc\u05d5\u05dd", "مرحبا بالعالم", "\u0661\u0662:\u0663\u0664", "📰", "🗞️",
    "👨‍👩‍👧‍👦", "🏳️‍🌈", "e\u0301", "\u0301", "\u0301" * 64, "Z\u0351\u0308\u0334" * 20, "\x00", "a\x00b", "\x00" * 8,
    "\x7f", "\x1b[31m", "\r\n", "\n", "\t", "\ufeff", "\ufffd", "\uffff", "\ufdd0", "\U0010ffff", "\U000e0001",
    "\ud800", "\udfff", "a\ud800b", "\udbff\udfff", "İ", "ß", "ﬀ", "Ⓜ", "ᵐ", "𝐦", "ｍ", "Ｍ",
]
# Escapes as they are sent: malformed, truncated, overlong, surrogates, noncharacters, separators.
PRE = [Pre(value) for value in [
    b"%", b"%%", b"%Z", b"%ZZ", b"%4", b"%4G", b"%g0", b"100%", b"%u202e", b"%U0041", b"%00", b"%0", b"%00%00",
    b"%ED%A0%80", b"%ED%BF%BF", b"%ED%A0%80%ED%B0%80", b"%C0%AF", b"%C0%80", b"%E0%80%80", b"%F0%80%80%80", b"%FF",
    b"%FE%FF", b"%F4%90%80%80", b"%F8%88%80%80%80", b"%E2%82", b"%E2%82%", b"%C3", b"%80", b"%BF%BF", b"%EF%BF%BF",
    b"+", b"++", b"a+b", b"%2B", b"%20", b"%26", b"%3D", b"%3B", b"%23", b"%3F", b"%2F", b"%2e%2e", b"%252F", b"%25",
    b"%0D%0A", b"%0A", b"%09",
]]


def long_strings():
    """Strings up to about 8 KB once escaped (the form bodies' limit is 16 KiB; the query's is far above)."""
    unit = st.sampled_from(["9", "0", "a", "1e9", "é", "📰", "\u0301", "%", "\x00", "ab:", "-", "30m", " "])

    def build(piece, length):
        escaped = len(urllib.parse.quote(piece.encode("utf-8", "surrogatepass"), safe=""))
        return piece * max(1, min(length, 8000 // escaped))

    return st.builds(build, unit, st.integers(min_value=100, max_value=8000))


numbers = st.one_of(
    st.sampled_from(NUMBERS),
    st.integers(min_value=-(2**80), max_value=2**80).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.floats(allow_nan=True, allow_infinity=True).map(lambda f: f"{f:.400g}" if f == f else "nan"),
)
# Values a form decoder reads (any text, escaped well), and with them the malformed escapes. In a form one malformed
# escape makes the whole form unreadable (400 "The form could not be read"): forms draw them less often, so that most
# examples reach the handler's own checks.
well_formed = st.one_of(
    numbers,
    st.sampled_from(TEXT),
    st.text(max_size=40),
    st.text(alphabet=st.characters(codec="utf-8", categories=["Mn", "Me", "Cf", "Co", "Zs", "Zl", "Zp", "So", "Nd", "No"]), max_size=20),
    long_strings(),
)
malformed = st.sampled_from(PRE)
hostile = st.one_of(well_formed, malformed)

UNITS = ["s", "m", "h", "h30m", "m30s", "ms", "d", "w", "S", "M", "H", "/s", "/m", "/h", "/min", "/x", "/", "//s", "/s/s", ""]
durations = st.one_of(
    st.builds(lambda n, u: n + u, st.one_of(st.sampled_from(NUMBERS), st.integers(-(2**70), 2**70).map(str)), st.sampled_from(UNITS)),
    st.builds(lambda a, b: a + b, st.sampled_from(["1h", "30m", "1e308h", "9e18s", "-1h", "NaNm", "infh", "0h", "1.5h"]),
              st.sampled_from(["", "30m", "1e308h", "1h1h", "s", "m" * 50, "30m" * 500, "-5m", "0s"])),
)
dates = st.one_of(
    st.sampled_from([
        "now", "NOW", " now", "05:00", "5:00", "24:00", "23:59:59", "23:59:60", "00:00:00", "99:99", "-1:00", "05:00:00:00",
        "٠٥:٠٠", "05:00 ", "0001-01-01T00:00:00Z", "0000-01-01T00:00:00Z", "9999-12-31T23:59:59Z", "9999-12-31T23:59:59+14:00",
        "1970-01-01T00:00:00Z", "1969-12-31T23:59:59Z", "2038-01-19T03:14:08Z", "2026-02-30T05:00:00Z", "2026-13-01T05:00",
        "2026-11-23T05:00:00+99:99", "2026-11-23T05:00:00.123456789Z", "2026-11-23T05:00:00.5+09:00", "2026-11-23 05:00",
        "2026-11-23T05:00", "+275760-09-13T00:00:00Z", "-271821-04-20T00:00:00Z", "292277026596-12-04T15:30:07Z",
        "1e300", "2026-11-23T05:00:00Z" + "0" * 300,
    ]),
    st.datetimes().map(lambda d: d.isoformat() + "Z"),
    st.datetimes().map(lambda d: d.strftime("%Y-%m-%d %H:%M")),
)


def uuid_like():
    return st.one_of(
        st.sampled_from([
            "00000000-0000-0000-0000-000000000000", "ffffffff-ffff-ffff-ffff-ffffffffffff", "FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF",
            BROADCAST.upper(), BROADCAST.replace("-", ""), "{" + BROADCAST + "}", "urn:uuid:" + BROADCAST, BROADCAST + "x",
            BROADCAST[:-1], BROADCAST + "0", " " + BROADCAST, BROADCAST + " ", BROADCAST.replace("-", "_"), EDITION,
            BROADCAST[:8] + "-" + "\u0661" * 4 + BROADCAST[13:], BROADCAST + "%00", BROADCAST + "/../" + BROADCAST,
        ]),
        st.uuids().map(str),
        st.uuids().map(lambda u: str(u).upper()),
        st.uuids().map(lambda u: u.hex),
    )


def near(token):
    """Variations on a real token: cut, lengthened, case-flipped, doubled."""
    return st.sampled_from([token[:-1], token + "A", token.swapcase(), token * 2, token[:1], " " + token, token + "\x00", token.replace("-", "+")])


class Field:
    """A parameter: its valid values, whether the handler needs it to read on, and the hostile values made for it
    (besides the general ones): near-misses of a real CSRF token, durations, dates, UUIDs."""

    def __init__(self, valid=None, required=False, near=None, weight=3):
        self.valid, self.required, self.near, self.weight = valid, required, near, weight

    def hostile(self, form=False):
        general = well_formed if form else hostile
        return st.one_of(general, self.near) if self.near is not None else general

    def under_test(self, form=False):
        """Its values when it is the parameter under test: one hostile value, mostly; else absent, or repeated (a
        valid one among them at times), or in a form now and then a malformed escape."""
        either = st.one_of(self.hostile(form), self.valid) if self.valid is not None else self.hostile(form)
        return st.integers(0, 11).flatmap(
            lambda k: st.lists(self.hostile(form), min_size=1, max_size=1) if k < 8
            else st.lists(either, min_size=2, max_size=4) if k < 10
            else st.lists(malformed, min_size=1, max_size=1) if k < 11
            else st.just([])
        )


# --- Building a request from drawn fields.


def escape(value, mode):
    """A value in a query or a form: percent-escaped as UTF-8 (lone surrogates as their 3 bytes), with `+` for spaces,
    or its non-ASCII characters as raw UTF-8 bytes."""
    if isinstance(value, Pre):
        return bytes(value)
    data = value.encode("utf-8", "surrogatepass")
    if mode == "plus":
        return urllib.parse.quote_plus(data, safe="").encode()
    if mode == "raw":
        return b"".join(bytes([byte]) if byte >= 0x80 or chr(byte).isalnum() or chr(byte) in "-._~:" else b"%%%02X" % byte for byte in data)
    return urllib.parse.quote(data, safe="").encode()


JUNK_KEYS = ["csrf", "window", "id", "x", "", "a[]", "a[0]", "__proto__", "constructor", "\u202e", "📰", "%ZZ", "%00", "a b", "=", "&"]
extra_pairs = st.lists(
    st.tuples(st.one_of(st.sampled_from(JUNK_KEYS), st.text(max_size=8)), st.lists(hostile, min_size=0, max_size=1)),
    max_size=3,
)
# Between pairs: mostly `&`; now and then `&&`, `;` or `&=&` (an empty key, which makes a form unreadable). Drawn from
# the middle of a range, away from the ends hypothesis favours.
separators = st.integers(0, 99).map(lambda k: b"&&" if 40 <= k < 44 else b";" if 44 <= k < 48 else b"&=&" if 48 <= k < 52 else b"&")


def encode_pairs(pairs, mode, separator=b"&"):
    """`key=value&…`; a value of None gives a bare key (`key`, no `=`)."""
    out = []
    for key, value in pairs:
        key_bytes = escape(key, "pct") if not isinstance(key, Pre) else bytes(key)
        out.append(key_bytes if value is None else key_bytes + b"=" + escape(value, mode))
    return separator.join(out)


@st.composite
def fields(draw, spec, exclusive=(), form=False):
    """Every field of a route: each either valid (or absent, when optional) or, for one or two of them, hostile.
    Sometimes every field is drawn independently ("chaos"). Of the `exclusive` fields (window and capacity: give one)
    at most one is there when none is under test, so that the handler reads the fields after them. Returns a list
    of (name, value) pairs, extra junk included."""
    names = list(spec)
    chaos = draw(st.integers(0, 7)) == 4
    # The field under test, by weight (the CSRF token less often than the fields it guards).
    weighted = [name for name in names for _ in range(spec[name].weight)]
    targets = set() if chaos else set(draw(st.lists(st.sampled_from(weighted), min_size=1, max_size=2)))
    left_out, kept = set(), []
    if exclusive and not chaos:
        kept = [name for name in exclusive if name in targets] or [draw(st.sampled_from(list(exclusive)))]
        left_out = set(exclusive) - set(kept)
    pairs = []
    for name in names:
        field = spec[name]
        if chaos:
            # A repeated field makes a whole form unreadable (400): in forms, repeats are left to the field under test.
            kind = draw(st.sampled_from(["valid", "hostile", "absent"] + ([] if form else ["repeated"])))
        elif name in left_out:
            kind = "absent"
        elif name in kept and name not in targets:
            kind = "valid"
        else:
            kind = "target" if name in targets else ("valid" if field.required or draw(st.integers(0, 3)) else "absent")
        if kind == "target":
            chosen = draw(field.under_test(form))
        elif kind == "hostile":
            chosen = [draw(field.hostile(form))]
        elif kind == "repeated":
            either = st.one_of(field.hostile(form), field.valid) if field.valid is not None else field.hostile(form)
            chosen = draw(st.lists(either, min_size=2, max_size=3))
        elif kind == "valid" and field.valid is not None:
            chosen = [draw(field.valid)]
        else:
            chosen = []
        pairs.extend((name, value) for value in chosen)
    if draw(st.integers(0, 7)) == 4:
        for key, value in draw(extra_pairs):
            pairs.insert(draw(st.integers(0, len(pairs))), (key, value[0] if value else None))
    return pairs


# Raw UTF-8 in the request line is refused by the HTTP parser before any route (400, empty): drawn rarely.
encoding = st.sampled_from(["pct"] * 5 + ["plus", "plus", "raw"])


def path_segment(value, mode):
    return escape(value, "pct" if mode == "plus" else mode)


# --- Checking an answer.


def names_a_field(answer, field_names):
    """A refusal names the field at fault (`window: …`), or says the form could not be read."""
    message = answer.message()
    return any(re.search(rf"(^|\W){re.escape(name)}\b", message) for name in field_names) or "could not be read" in message


def refused_by_http(answer):
    """NIO's HTTP parser refuses a request line with raw non-ASCII bytes: 400 with an empty body, before any route."""
    return answer.status == 400 and not answer.body and answer.raw_target


def check_page(answer, session, allowed, *, field_names=(), redirects=()):
    """The answer's status is one the route gives; a 400 names the field; a redirect goes where the route sends it,
    never to the sign-in (the fuzzer's session must stay good)."""
    session.renewed(answer)
    if refused_by_http(answer):
        return
    assert answer.status in allowed, f"{answer.status} (expected one of {sorted(allowed)}) for {answer.repro}: {answer.message()!r}"
    if answer.status == 303:
        location = answer.headers.get("location", "")
        assert any(re.search(pattern, location) for pattern in redirects), f"303 to {location!r} for {answer.repro}"
    if answer.status == 400 and field_names:
        assert names_a_field(answer, field_names), f"400 without naming a field ({', '.join(field_names)}) for {answer.repro}: {answer.message()!r}"


def fuzz_settings(examples):
    return settings(
        max_examples=examples,
        deadline=None,
        derandomize=True,
        database=None,
        print_blob=False,
        # No "explain" phase: it costs a rerun per failure and prints the falsifying example without its values.
        phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink],
        suppress_health_check=list(HealthCheck),
    )


roles = st.sampled_from(["viewer", "operator"])
operator_mostly = st.sampled_from(["operator"] * 5 + ["viewer"])

# --- GET /console/plan: publication, environment, window, capacity, cohorts, start.

window_valid = st.sampled_from(["30m", "1h", "90s", "600", "24h", "1s", "1h30m", " 30m ", "86400"])
capacity_valid = st.sampled_from(["2000/s", "2000", "120000/m", "0.01", "1e7", "10000000", "3600/h", "1/min"])
cohorts_valid = st.sampled_from(["1", "4", "16", "1024", " 16"])
environment_valid = st.sampled_from(["production", "sandbox", "PRODUCTION", " sandbox "])

PLAN_FIELDS = {
    "publication": Field(st.just(PUBLICATION), required=True, near=st.sampled_from(["0" + PUBLICATION, PUBLICATION + ".0", "+" + PUBLICATION])),
    "environment": Field(environment_valid),
    "window": Field(window_valid, near=durations),
    "capacity": Field(capacity_valid, near=durations),
    "cohorts": Field(cohorts_valid),
    "start": Field(st.sampled_from(["", "now", "05:00", "23:59:59", "2030-01-01T05:00:00Z"]), near=dates),
}


@fuzz_settings(300)
@given(role=roles, pairs=fields(PLAN_FIELDS, exclusive=("window", "capacity")), mode=encoding, separator=separators)
def test_plan_page(role, pairs, mode, separator):
    session = SESSIONS[role]
    answer = send("GET /console/plan", "GET", b"/console/plan?" + encode_pairs(pairs, mode, separator), session.headers())
    check_page(answer, session, {200, 400}, field_names=list(PLAN_FIELDS))


# --- Forms: the session's CSRF token, and a form posted from the console's own origin.


def csrf_field(role):
    """The session's real CSRF token; under test, another session's or a variation on the real one (or anything)."""
    other = SESSIONS["viewer" if role == "operator" else "operator"].csrf
    mine = SESSIONS[role].csrf
    return Field(st.just(mine), required=True, near=st.one_of(st.just(other), near(mine)), weight=1)


def post_form(route, path, session, pairs, mode, separator=b"&"):
    return send(route, "POST", path, session.headers(form=True), encode_pairs(pairs, mode, separator))


# --- POST /console/broadcasts: the start form (or its dry run).

START_FIELDS = {
    "csrf": None,  # the session's (csrf_field)
    "edition": Field(st.sampled_from([EDITION, EDITION.upper()]), required=True, near=uuid_like()),
    "environment": Field(environment_valid),
    "window": Field(window_valid, near=durations),
    "capacity": Field(capacity_valid, near=durations),
    "cohorts": Field(cohorts_valid),
    "waveInterval": Field(st.sampled_from(["30m", "20m", "1h", "24h", "1200", ""]), near=durations),
    "maxPushes": Field(st.sampled_from(["auto", "AUTO", "1", "10", "", " 3 "])),
    "dormantAfter": Field(st.sampled_from(["0", "3", "100"])),
    "alertLastResort": Field(st.sampled_from(["on", "off", ""])),
    # Mostly a dry run: a real start of the suite's edition is attached to its broadcast, or makes one in sandbox.
    "dryRun": Field(st.sampled_from(["on", "on", "on", "off"])),
}


@fuzz_settings(300)
@given(data=st.data(), role=operator_mostly, mode=encoding, separator=separators)
def test_start_broadcast(data, role, mode, separator):
    session = SESSIONS[role]
    spec = dict(START_FIELDS, csrf=csrf_field(role))
    pairs = data.draw(fields(spec, exclusive=("window", "capacity"), form=True), label="form")
    answer = post_form("POST /console/broadcasts", "/console/broadcasts", session, pairs, mode, separator)
    check_page(
        answer,
        session,
        {200, 303, 400, 403, 404, 409, 413},
        field_names=[name for name in START_FIELDS if name != "csrf"],
        redirects=[r"/console/broadcasts/[0-9a-f-]{36}\?done=(started|attached)$"],
    )
    if answer.status == 303:
        started = re.search(r"/console/broadcasts/([0-9a-f-]{36})", answer.headers["location"]).group(1)
        if started not in BROADCASTS:
            BROADCASTS.append(started)


# --- GET /console/broadcasts/{id} (and `done`), …/live, …/cancel; POST …/cancel.

# A broadcast that exists (the suite's, or one the fuzzer started) half the time.
known_ids = st.integers(0, 63).map(lambda i: BROADCASTS[i % len(BROADCASTS)])
ids = st.integers(0, 9).flatmap(lambda k: known_ids if k < 5 else uuid_like() if k < 8 else hostile)
DONE = Field(st.sampled_from(["cancelled", "started", "attached"]))


@fuzz_settings(120)
@given(role=roles, id=ids, pairs=fields({"done": DONE}), mode=encoding)
def test_broadcast_page(role, id, pairs, mode):
    session = SESSIONS[role]
    target = b"/console/broadcasts/" + path_segment(id, mode) + b"?" + encode_pairs(pairs, mode)
    answer = send("GET /console/broadcasts/{id}", "GET", target, session.headers())
    # An empty or slash-bearing id reaches another route (the list, the cancel form, the not-found page).
    check_page(answer, session, {200, 400, 403, 404, 409})


class LiveSessions:
    """A viewer's session holds 4 live streams at once (429 past them), and a closed stream is noticed at its next
    write: each stream of a broadcast that exists gets a session that has not opened 3 yet."""

    def __init__(self):
        self.session, self.opened = None, 0

    def next(self):
        if self.session is None or self.opened >= 3:
            self.session, self.opened = Session("viewer", VIEWER), 0
        self.opened += 1
        return self.session


LIVE = LiveSessions()


@fuzz_settings(60)
@given(id=ids, pairs=fields({"x": Field()}), mode=encoding)
def test_live_stream(id, pairs, mode):
    session = LIVE.next()
    target = b"/console/broadcasts/" + path_segment(id, mode) + b"/live" + (b"?" + encode_pairs(pairs, mode) if pairs else b"")
    answer = send("GET /console/broadcasts/{id}/live", "GET", target, session.headers())
    check_page(answer, session, {200, 400, 404, 429})
    if answer.status == 200 and answer.headers.get("content-type", "").startswith("text/event-stream"):
        assert answer.body.startswith(b"retry:"), answer.body[:100]


@fuzz_settings(60)
@given(role=operator_mostly, id=ids, mode=encoding)
def test_cancel_form(role, id, mode):
    session = SESSIONS[role]
    answer = send("GET /console/broadcasts/{id}/cancel", "GET", b"/console/broadcasts/" + path_segment(id, mode) + b"/cancel", session.headers())
    check_page(answer, session, {200, 403, 404, 409})


@fuzz_settings(100)
@given(data=st.data(), role=operator_mostly, mode=encoding)
def test_cancel(data, role, mode):
    session = SESSIONS[role]
    # Mostly an id that is not a broadcast's: the suite's broadcast is cancelled once, then it is 409.
    id = data.draw(ids, label="id")
    pairs = data.draw(fields({"csrf": csrf_field(role)}, form=True), label="form")
    target = b"/console/broadcasts/" + path_segment(id, mode) + b"/cancel"
    answer = post_form("POST /console/broadcasts/{id}/cancel", target, session, pairs, mode)
    check_page(answer, session, {400, 403, 404, 405, 409}.union({303} if role == "operator" else set()), redirects=[r"/console/broadcasts/[0-9a-f-]{36}\?done=cancelled$"])


# --- GET and POST /console/devices: the look-up form (token, days).

device_tokens = st.one_of(
    st.sampled_from(DEVICE_TOKENS or ["ab" * 32]),
    st.sampled_from(["ab" * 32, "AB" * 32, "ab" * 31, "ab" * 33, "a" * 63, "ab" * 100, "g" * 64, "x" * 32, "x" * 2048, "x" * 2049, "x:" * 40]),
    st.text(alphabet="0123456789abcdef", min_size=60, max_size=70),
    st.text(alphabet="abcXYZ09-_:", min_size=30, max_size=200),
)
DEVICE_FIELDS = {
    "csrf": None,  # the session's (csrf_field)
    "token": Field(device_tokens),
    "days": Field(st.sampled_from(["1", "3", "30", ""])),
}


@fuzz_settings(200)
@given(data=st.data(), role=roles, mode=encoding, separator=separators)
def test_device_lookup(data, role, mode, separator):
    session = SESSIONS[role]
    pairs = data.draw(fields(dict(DEVICE_FIELDS, csrf=csrf_field(role)), form=True), label="form")
    answer = post_form("POST /console/devices", "/console/devices", session, pairs, mode, separator)
    check_page(answer, session, {200, 400, 403, 404, 413}, field_names=["token", "days"])


# --- The pages that read no parameter: junk query parameters must change nothing.

PLAIN_PAGES = ["/console", "/console/", "/console/sign-in", "/console/broadcasts", "/console/devices", "/console/apps", "/console/workers", "/console/audit"]


@pytest.mark.parametrize("path", PLAIN_PAGES)
@fuzz_settings(13)
@given(role=roles, pairs=fields({"x": Field(), "csrf": Field()}), mode=encoding, separator=separators)
def test_plain_pages(path, role, pairs, mode, separator):
    session = SESSIONS[role]
    answer = send(f"GET {path} (junk query)", "GET", path.encode() + b"?" + encode_pairs(pairs, mode, separator), session.headers())
    check_page(answer, session, {200, 303, 404}, redirects=[r"/console/broadcasts$"])


# --- GET /console/static/{name} (no session needed) and whatever else is under /console (the not-found page).


@fuzz_settings(60)
@given(name=st.one_of(st.sampled_from(STATIC_NAMES), st.sampled_from(STATIC_NAMES).map(lambda n: n.upper()), hostile, uuid_like()), mode=encoding, query=st.booleans())
def test_static_file(name, mode, query):
    target = b"/console/static/" + path_segment(name, mode) + (b"?v=%25ZZ" if query else b"")
    answer = send("GET /console/static/{name}", "GET", target)
    # An empty name is another route (the not-found page), which sends a client without a session to the sign-in.
    assert answer.status in {200, 303, 404} or refused_by_http(answer), f"{answer.status} for {answer.repro}"


@fuzz_settings(100)
@given(role=roles, segments=st.lists(st.one_of(hostile, uuid_like(), st.sampled_from(["broadcasts", "live", "cancel", "plan", "static", "..", "."])), min_size=1, max_size=4), mode=encoding)
def test_not_found(role, segments, mode):
    session = SESSIONS[role]
    target = b"/console/" + b"/".join(path_segment(segment, mode) for segment in segments)
    answer = send("GET /console/** (not found)", "GET", target, session.headers())
    check_page(answer, session, {200, 303, 400, 403, 404, 409, 429}, redirects=[r"/console/broadcasts$"])


# --- POST /console/sessions/{id}/end (id, csrf): an operator ends a session, listed on the audit page by number.

session_numbers = st.one_of(
    st.integers(min_value=-3, max_value=60).map(str),
    st.sampled_from(["0", "-0", "+1", " 1", "1 ", "01", "1.0", "1e3", "0x1", "9223372036854775807", "9223372036854775808",
                     "18446744073709551616", "1" * 19, "1" * 20, "9" * 19, "١"]),
    hostile,
)


def sign_in_again():
    """Ending a session by number can end one of the fuzzer's own (numbers are small and dense): sign them in again."""
    for each in SESSIONS.values():
        each.sign_in()
    LIVE.session = None


@fuzz_settings(60)
@given(data=st.data(), role=operator_mostly, mode=encoding)
def test_end_session(data, role, mode):
    session = SESSIONS[role]
    number = data.draw(session_numbers, label="id")
    pairs = data.draw(fields({"csrf": csrf_field(role)}, form=True), label="form")
    target = b"/console/sessions/" + path_segment(number, mode) + b"/end"
    answer = post_form("POST /console/sessions/{id}/end", target, session, pairs, mode)
    # 404 for a session that is not signed in, or a number that is not a path segment.
    check_page(answer, session, {303, 400, 403, 404, 413}, field_names=["id"], redirects=[r"/console/audit$", r"/console/sign-in$"])
    if answer.status == 303:
        sign_in_again()


# --- POST /console/sign-in (token, name), POST /console/sign-out and /console/sign-out-everyone (csrf).

SIGN_IN_FIELDS = {
    "token": Field(st.sampled_from([OPERATOR, VIEWER]), required=True, near=near(OPERATOR)),
    "name": Field(st.sampled_from(["fuzzer", "", "Ada Lovelace"])),
}


@fuzz_settings(100)
@given(pairs=fields(SIGN_IN_FIELDS, form=True), mode=encoding, separator=separators)
def test_sign_in(pairs, mode, separator):
    answer = send("POST /console/sign-in", "POST", "/console/sign-in", FORM_HEADERS, encode_pairs(pairs, mode, separator))
    assert answer.status in {303, 400, 401, 413, 429} or refused_by_http(answer), f"{answer.status} for {answer.repro}"
    if answer.status == 303:
        assert answer.headers.get("location", "").endswith("/console/broadcasts"), answer.headers.get("location")


def test_sign_in_with_a_name_of_many_code_points():
    """What the fuzzer found first (combining marks in the name): a name of at most 64 characters but more than 64
    code points, here 33 decomposed é (`e` + U+0301, 66 code points), must sign in like any other. Kept as a plain
    case so that it fails whatever the generator draws."""
    answer = send(
        "POST /console/sign-in", "POST", "/console/sign-in", FORM_HEADERS, urllib.parse.urlencode({"token": VIEWER, "name": "e\u0301" * 33})
    )
    assert answer.status == 303, f"{answer.status} for {answer.repro}"


@fuzz_settings(30)
@given(data=st.data(), role=roles, mode=encoding)
def test_sign_out(data, role, mode):
    # A session of its own each time: the real token signs it out.
    session = Session(role, OPERATOR if role == "operator" else VIEWER)
    field = Field(st.just(session.csrf), required=True, near=near(session.csrf))
    pairs = data.draw(fields({"csrf": field}, form=True), label="form")
    answer = post_form("POST /console/sign-out", "/console/sign-out", session, pairs, mode)
    check_page(answer, session, {303, 400, 403, 413}, redirects=[r"/console/sign-in$"])


@fuzz_settings(30)
@given(data=st.data(), role=operator_mostly, mode=encoding)
def test_sign_out_everyone(data, role, mode):
    session = SESSIONS[role]
    pairs = data.draw(fields({"csrf": csrf_field(role)}, form=True), label="form")
    answer = post_form("POST /console/sign-out-everyone", "/console/sign-out-everyone", session, pairs, mode)
    check_page(answer, session, {400, 403, 413} | ({303} if role == "operator" else set()), redirects=[r"/console/sign-in$"])
    if answer.status == 303:
        # Every session ended, the fuzzer's own too: they sign in again.
        sign_in_again()


def test_the_sessions_still_work():
    """The control: after all of it, both sessions still open a page (the fuzzer did not test a signed-out client)."""
    for session in SESSIONS.values():
        answer = send("control", "GET", "/console/broadcasts", session.headers())
        assert answer.status == 200, answer.status
