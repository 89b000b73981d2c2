"""A hostile client against every console and admin route of a live `paperboy serve` (issue 35, item 9).

For every route: no session or token, a garbage or guessed cookie, the database's digest of a real one, an expired,
idle or signed-out session, one whose row was altered (role, token), a viewer where an operator is needed, a request
from another site (`Sec-Fetch-Site`, `Origin`), no or another session's CSRF token, an oversized body, a malformed
form or JSON body. Each must answer as the rules say
(a redirect to the sign-in, 401, 403, 413, 400, 429: never 2xx, never 5xx) and change nothing: a digest of what a
request could change (broadcasts, apps, keys, origins, publications, editions, console keys and sessions, the
audit log) is the same before and after.

Tests/hostile/run.sh starts the server and exports what this reads. Each case comes from an address of its own (the
server trusts 127.0.0.1 as a proxy and reads X-Forwarded-For), so that one case's wrong tokens do not make the next
wait.
"""

import base64
import hashlib
import http.client
import itertools
import json
import os
import subprocess
import urllib.parse

import pytest

HOST = "127.0.0.1"
PORT = int(os.environ["HOSTILE_PORT"])
ORIGIN = f"http://{HOST}:{PORT}"
OPERATOR = os.environ["HOSTILE_OPERATOR_TOKEN"]
VIEWER = os.environ["HOSTILE_VIEWER_TOKEN"]
ADMIN = os.environ["HOSTILE_ADMIN_TOKEN"]
BROADCAST = os.environ["HOSTILE_BROADCAST_ID"]
EDITION = os.environ["HOSTILE_EDITION_ID"]
APP = os.environ["HOSTILE_APP_ID"]
DATABASE_URL = os.environ["DATABASE_URL"]
COOKIE = "paperboy_console"

addresses = (f"10.{a}.{b}.{c}" for a, b, c in itertools.product(range(1, 250), range(250), range(1, 250)))


def request(method, path, headers=None, body=None, address=None):
    """One request straight to serve, redirects not followed; returns (status, headers, body)."""
    connection = http.client.HTTPConnection(HOST, PORT, timeout=30)
    sent = {"X-Forwarded-For": address or next(addresses)}
    sent.update(headers or {})
    if isinstance(body, str):
        body = body.encode()
    connection.request(method, path, body=body, headers=sent)
    response = connection.getresponse()
    data = response.read()
    connection.close()
    return response.status, {k.lower(): v for k, v in response.getheaders()}, data


# --- Sessions as the server makes them, and as an attacker would.


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def sign_in(token):
    status, headers, _ = request(
        "POST",
        "/console/sign-in",
        {"Content-Type": "application/x-www-form-urlencoded", "Origin": ORIGIN, "Sec-Fetch-Site": "same-origin"},
        urllib.parse.urlencode({"token": token, "name": "hostile"}),
    )
    assert status == 303, f"sign-in: {status}"
    cookie = headers["set-cookie"].split(";")[0]
    assert cookie.startswith(COOKIE + "=")
    return cookie.split("=", 1)[1]


def csrf_of(cookie):
    status, _, body = request("GET", "/console/broadcasts", {"Cookie": f"{COOKIE}={cookie}"})
    assert status == 200
    text = body.decode()
    marker = 'name="csrf" value="'
    start = text.index(marker) + len(marker)
    return text[start : text.index('"', start)]


# Real sessions, made once: the operator's and the viewer's with their CSRF tokens, and one signed out.
OPERATOR_COOKIE = sign_in(OPERATOR)
OPERATOR_CSRF = csrf_of(OPERATOR_COOKIE)
VIEWER_COOKIE = sign_in(VIEWER)
VIEWER_CSRF = csrf_of(VIEWER_COOKIE)
SIGNED_OUT_COOKIE = sign_in(OPERATOR)
SIGNED_OUT_CSRF = csrf_of(SIGNED_OUT_COOKIE)
_status, _, _ = request(
    "POST",
    "/console/sign-out",
    {
        "Cookie": f"{COOKIE}={SIGNED_OUT_COOKIE}",
        "Content-Type": "application/x-www-form-urlencoded",
        "Origin": ORIGIN,
        "Sec-Fetch-Site": "same-origin",
    },
    f"csrf={SIGNED_OUT_CSRF}",
)
assert _status == 303, "the signed-out session's sign-out"


# --- What a request could change.

DIGEST_SQL = """
SELECT md5(concat_ws('|',
  (SELECT string_agg(id::text || state || coalesce(finished_at::text, ''), ',' ORDER BY id) FROM broadcasts),
  (SELECT string_agg(row(a.*)::text, ',' ORDER BY id) FROM apps a),
  (SELECT string_agg(id::text || coalesce(revoked_at::text, ''), ',' ORDER BY id) FROM app_api_keys),
  (SELECT string_agg(row(o.*)::text, ',' ORDER BY id) FROM origins o),
  (SELECT string_agg(row(p.*)::text, ',' ORDER BY id) FROM publications p),
  (SELECT string_agg(id::text, ',' ORDER BY id) FROM editions),
  (SELECT string_agg(md5(secret), ',') FROM console_keys),
  (SELECT count(*)::text FROM console_sessions),
  (SELECT count(*)::text FROM audit_log)
))
"""


class Psql:
    """One psql session for the whole run: a digest costs a round trip, not a process."""

    def __init__(self):
        self.process = subprocess.Popen(
            ["psql", DATABASE_URL, "-XAtq", "-v", "ON_ERROR_STOP=1"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )

    def query(self, sql):
        self.process.stdin.write(" ".join(sql.split()) + ";\n\\echo __end__\n")
        self.process.stdin.flush()
        lines = []
        while (line := self.process.stdout.readline()) != "__end__\n":
            assert line, "psql ended"
            lines.append(line.strip())
        return "\n".join(lines)


PSQL = Psql()


def stored(cookie, change):
    """A real session whose row is then changed in the database as time or an operator would change it."""
    PSQL.query(f"UPDATE console_sessions SET {change} WHERE secret_digest = sha256('{cookie}'::bytea)")
    return cookie


# The cookies no request may get in with, by kind. Sessions are rows on the server: a cookie holds 43 random
# base64url characters, found by their SHA-256.
BAD_SESSIONS = {
    "no session": None,
    "garbage cookie": "not-a-cookie",
    "guessed secret": b64url(os.urandom(32)),
    "too long": b64url(os.urandom(32)) + "A",
    "the stored digest (a database copy)": b64url(hashlib.sha256(OPERATOR_COOKIE.encode()).digest()),
    "expired": stored(sign_in(OPERATOR), "expires_at = now() - interval '1 second'"),
    "idle": stored(sign_in(OPERATOR), "seen_at = now() - interval '2 hours'"),
    "viewer's row made operator": stored(sign_in(VIEWER), "role = 'operator'"),
    "token changed": stored(sign_in(OPERATOR), "token_mark = '\\x00000000000000000000000000000000'"),
    "signed out": SIGNED_OUT_COOKIE,
}


def digest():
    return PSQL.query(DIGEST_SQL)


def check(status, headers, body, allowed, before):
    assert status in allowed, f"status {status}, expected one of {sorted(allowed)}: {body[:300]!r}"
    assert status < 500
    assert headers.get("cache-control") in ("no-store", "public, max-age=31536000, immutable"), headers.get("cache-control")
    after = digest()
    assert after == before, "the request changed what is stored"
    if status == 303:
        assert headers.get("location", "").endswith("/console/sign-in"), headers.get("location")


# --- The console's routes.

ID = BROADCAST
CONSOLE_PAGES = [
    "/console/broadcasts",
    f"/console/broadcasts/{ID}",
    f"/console/broadcasts/{ID}/live",
    f"/console/broadcasts/{ID}/cancel",
    f"/console/plan?publication=1&environment=production&window=30m&cohorts=4",
    "/console/devices",
    "/console/apps",
    "/console/workers",
    "/console/audit",
    "/console/no-such-page",
]

VIEWER_SESSION = PSQL.query(f"SELECT id FROM console_sessions WHERE secret_digest = sha256('{VIEWER_COOKIE}'::bytea)")
assert VIEWER_SESSION.isdigit(), VIEWER_SESSION

# Each action with a form that would do it, and whether a viewer may (sign-out, device look-up).
CONSOLE_ACTIONS = {
    "start": ("/console/broadcasts", f"edition={EDITION}&environment=sandbox&window=30m&cohorts=4", False),
    "cancel": (f"/console/broadcasts/{ID}/cancel", "", False),
    "sign out everyone": ("/console/sign-out-everyone", "", False),
    "end a session": (f"/console/sessions/{VIEWER_SESSION}/end", "", False),
    "sign out": ("/console/sign-out", "", True),
    "device look-up": ("/console/devices", "token=" + "ab" * 32 + "&days=3", True),
}


def test_the_suites_own_cookies_are_well_made():
    """The control: a session signed in here and changed in the database in a way that breaks nothing gets in, so the
    expired, idle and altered ones above are refused for what is wrong with them, not for being changed."""
    control = stored(sign_in(VIEWER), "seen_at = now() - interval '1 minute'")
    status, _, body = request("GET", "/console/broadcasts", {"Cookie": f"{COOKIE}={control}"})
    assert status == 200, body[:200]


@pytest.mark.parametrize("kind", list(BAD_SESSIONS))
@pytest.mark.parametrize("path", CONSOLE_PAGES)
def test_console_page_without_a_good_session(path, kind):
    before = digest()
    cookie = BAD_SESSIONS[kind]
    status, headers, body = request("GET", path, {"Cookie": f"{COOKIE}={cookie}"} if cookie else {})
    check(status, headers, body, {303}, before)


def form_headers(cookie=None, **more):
    headers = {"Content-Type": "application/x-www-form-urlencoded", "Origin": ORIGIN, "Sec-Fetch-Site": "same-origin"}
    if cookie:
        headers["Cookie"] = f"{COOKIE}={cookie}"
    headers.update(more)
    return headers


def with_csrf(form, csrf):
    return (form + "&" if form else "") + f"csrf={csrf}"


@pytest.mark.parametrize("kind", list(BAD_SESSIONS))
@pytest.mark.parametrize("action", list(CONSOLE_ACTIONS))
def test_console_action_without_a_good_session(action, kind):
    path, form, _ = CONSOLE_ACTIONS[action]
    before = digest()
    # The operator's real CSRF token travels with the bad cookie: it must not help.
    status, headers, body = request("POST", path, form_headers(BAD_SESSIONS[kind]), with_csrf(form, OPERATOR_CSRF))
    check(status, headers, body, {303}, before)


@pytest.mark.parametrize("action", [name for name, (_, _, viewer) in CONSOLE_ACTIONS.items() if not viewer])
def test_console_action_by_a_viewer(action):
    path, form, _ = CONSOLE_ACTIONS[action]
    before = digest()
    status, headers, body = request("POST", path, form_headers(VIEWER_COOKIE), with_csrf(form, VIEWER_CSRF))
    check(status, headers, body, {403}, before)


# Requests with the operator's good session that a browser would only send from another site, or a stale form.
FORGERIES = {
    "cross-site fetch": (form_headers(None, **{"Sec-Fetch-Site": "cross-site"}), True),
    "same-site fetch": (form_headers(None, **{"Sec-Fetch-Site": "same-site"}), True),
    "foreign origin": (form_headers(None, Origin="https://evil.example"), True),
    "origin on another port": (form_headers(None, Origin=f"http://{HOST}:{PORT + 1}"), True),
    "origin with another scheme": (form_headers(None, Origin=f"https://{HOST}:{PORT}"), True),
    "no CSRF token": (form_headers(None), False),
    "another session's CSRF token": (form_headers(None), "viewer"),
    "a signed-out session's CSRF token": (form_headers(None), "signed out"),
    "a made-up CSRF token": (form_headers(None), "made up"),
}


@pytest.mark.parametrize("forgery", list(FORGERIES))
@pytest.mark.parametrize("action", [name for name in CONSOLE_ACTIONS if name != "sign out"])
def test_console_action_forged(action, forgery):
    path, form, _ = CONSOLE_ACTIONS[action]
    headers, csrf = FORGERIES[forgery]
    headers = dict(headers, Cookie=f"{COOKIE}={OPERATOR_COOKIE}")
    token = {True: OPERATOR_CSRF, False: None, "viewer": VIEWER_CSRF, "signed out": SIGNED_OUT_CSRF, "made up": "A" * 43}[csrf]
    before = digest()
    status, response_headers, body = request("POST", path, headers, with_csrf(form, token) if token else form)
    check(status, response_headers, body, {403}, before)


@pytest.mark.parametrize("path", [path for path, _, _ in CONSOLE_ACTIONS.values()] + ["/console/sign-in"])
def test_console_oversized_body(path):
    before = digest()
    body = "csrf=" + OPERATOR_CSRF + "&pad=" + "x" * (64 * 1024)
    status, headers, response = request("POST", path, form_headers(OPERATOR_COOKIE), body)
    check(status, headers, response, {413}, before)


MALFORMED = {
    "bad percent-encoding": "csrf=%ZZ&token=%",
    "binary": b"\xff\xfe\x00\x01csrf=\x00",
    "json": '{"csrf": "x", "token": "y"}',
    "repeated keys": "csrf=a&csrf=b&csrf=c",
}


@pytest.mark.parametrize("malformed", list(MALFORMED))
@pytest.mark.parametrize("path", [path for path, _, _ in CONSOLE_ACTIONS.values()])
def test_console_malformed_form(path, malformed):
    before = digest()
    status, headers, body = request("POST", path, form_headers(OPERATOR_COOKIE), MALFORMED[malformed])
    check(status, headers, body, {400, 403}, before)


SIGN_IN_ATTACKS = {
    "cross-site": (form_headers(None, **{"Sec-Fetch-Site": "cross-site"}), f"token={OPERATOR}", {403}),
    "foreign origin": (form_headers(None, Origin="https://evil.example"), f"token={OPERATOR}", {403}),
    "wrong token": (form_headers(None), "token=" + "0" * 48, {401, 429}),
    "no token": (form_headers(None), "name=mallory", {401, 429}),
    "malformed": (form_headers(None), "token=%ZZ", {400, 401, 429}),
}


@pytest.mark.parametrize("attack", list(SIGN_IN_ATTACKS))
def test_sign_in_attack(attack):
    headers, body, allowed = SIGN_IN_ATTACKS[attack]
    before = digest()
    status, response_headers, response = request("POST", "/console/sign-in", headers, body)
    check(status, response_headers, response, allowed, before)
    assert "set-cookie" not in response_headers


def test_sign_in_guesses_wait_without_locking_out_the_operator():
    guesser = next(addresses)
    statuses = [request("POST", "/console/sign-in", form_headers(None), "token=" + "1" * 40, address=guesser)[0] for _ in range(30)]
    assert statuses[-1] == 429 and set(statuses) <= {401, 429}, statuses
    assert sign_in(OPERATOR)


# --- The admin API: every operation of openapi.yaml that needs the admin token.

ADMIN_ROUTES = [
    ("GET", "/v1/apps", None),
    ("PUT", f"/v1/apps/{APP}/apns", {"teamId": "TEAM123456", "keyId": "KEY1234567", "keyFile": "/tmp/none.p8"}),
    ("DELETE", f"/v1/apps/{APP}/apns", None),
    ("DELETE", f"/v1/apps/{APP}/fcm", None),
    ("GET", f"/v1/apps/{APP}/keys", None),
    ("POST", f"/v1/apps/{APP}/keys", None),
    ("POST", f"/v1/apps/{APP}/keys/1/revoke", None),
    ("GET", "/v1/origins", None),
    ("POST", "/v1/origins", {"name": "hostile", "capacity": 10}),
    ("PUT", "/v1/origins/hostile", {"capacity": 10}),
    ("PUT", f"/v1/apps/{APP}/publications/morning/origin", {"origin": None}),
    ("POST", "/v1/editions", {"publication": "morning"}),
    ("POST", "/v1/broadcasts", {"edition": EDITION, "environment": "sandbox"}),
    ("GET", f"/v1/broadcasts/{ID}", None),
    ("POST", f"/v1/broadcasts/{ID}/cancel", None),
    ("GET", "/v1/insights/wake-rates?publication=morning", None),
]
# The writes that read a body: a body sent to one that reads none is not read (and the request is then the operation).
WRITES = [route for route in ADMIN_ROUTES if route[2] is not None]

ADMIN_TOKENS = {
    "no token": None,
    "wrong token": f"Bearer {'0' * 48}",
    "token with more after it": f"Bearer {ADMIN}x",
    "token cut short": f"Bearer {ADMIN[:-1]}",
    "basic scheme": "Basic " + base64.b64encode(f"admin:{ADMIN}".encode()).decode(),
    "lower-case scheme": f"bearer {ADMIN}",
    "a device key": "Bearer pb_" + "A" * 43,
}


@pytest.mark.parametrize("credential", list(ADMIN_TOKENS))
@pytest.mark.parametrize("method,path,body", ADMIN_ROUTES, ids=[f"{m} {p}" for m, p, _ in ADMIN_ROUTES])
def test_admin_without_the_token(method, path, body, credential):
    headers = {"Content-Type": "application/json"}
    if ADMIN_TOKENS[credential]:
        headers["Authorization"] = ADMIN_TOKENS[credential]
    before = digest()
    status, response_headers, response = request(method, path, headers, json.dumps(body) if body is not None else None)
    check(status, response_headers, response, {401, 429}, before)
    assert json.loads(response)["error"]["field"] == "Authorization"


@pytest.mark.parametrize("method,path,body", WRITES, ids=[f"{m} {p}" for m, p, _ in WRITES])
def test_admin_oversized_body(method, path, body):
    before = digest()
    status, headers, response = request(
        method, path, {"Authorization": f"Bearer {ADMIN}", "Content-Type": "application/json"}, '{"pad": "' + "x" * (2 * 1024 * 1024) + '"}'
    )
    check(status, headers, response, {413}, before)


@pytest.mark.parametrize("method,path,body", WRITES, ids=[f"{m} {p}" for m, p, _ in WRITES])
def test_admin_malformed_json(method, path, body):
    before = digest()
    status, headers, response = request(method, path, {"Authorization": f"Bearer {ADMIN}", "Content-Type": "application/json"}, '{"truncated": ')
    check(status, headers, response, {400}, before)


# --- What strangers may read.


def test_readiness_says_up_or_down_only():
    status, _, body = request("GET", "/health/ready")
    assert status == 200
    assert json.loads(body) == {"status": "ready"}
