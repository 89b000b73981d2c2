#!/usr/bin/env python3
"""The Python Firebase Admin SDK's messaging.send_each against an FCM-compatible endpoint (paperboy fcm-sim).

The field's usual FCM library, as the comparison for `paperboy-bench fcm` (BENCHMARKS.md). It sends N data
messages like a broadcast's (Android, normal priority, edition/manifest/tier/deadline/fetch list as string
data) to distinct FCM-shaped tokens with `messaging.send_each`, in chunks of 500 (the SDK's maximum), and
prints messages/s and CPU seconds. Any message not accepted makes it exit non-zero: a benchmark that
measures errors is no benchmark.

Credentials come from a service-account file whose token_uri is the simulator's (fcm-sim
--write-service-account, or POST /control/service-accounts). The SDK's FCM URL is a class constant,
`firebase_admin.messaging._MessagingService.FCM_URL` (firebase-admin 7.7.0); it is replaced before the
messaging service is made. google-auth signs the assertion with `aud` = its constant
`google.oauth2.service_account._GOOGLE_OAUTH2_TOKEN_ENDPOINT` (Google's token URL) rather than the file's
token_uri; it is set to the token_uri, as the simulator checks `aud` against its own token URL. The SDK mounts a 100-connection `requests` adapter for
https://fcm.googleapis.com only; the same adapter is mounted for the simulator's URL, so that the SDK
talks to the simulator as it would to FCM.

Setup (a venv outside the repository):
    python3 -m venv /tmp/firebase-admin-venv && /tmp/firebase-admin-venv/bin/pip install firebase-admin
Run (paperboy-bench fcm --firebase-admin /tmp/firebase-admin-venv/bin/python runs it for you):
    /tmp/firebase-admin-venv/bin/python scripts/bench-firebase-admin.py \\
        --endpoint http://127.0.0.1:8089 --service-account /tmp/fcm-sim-account.json -n 20000
"""

import argparse
import json
import resource
import sys
import time
import warnings


def token(index, salt):
    """A distinct FCM-shaped registration token: an instance id, ':APA91b', then filler (163 characters)."""
    instance = f"b{salt:04x}{index:017x}"
    return instance + ":APA91b" + ("Fz7_kQ-2" * 17)[:134]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--endpoint", required=True, help="the FCM-compatible endpoint, e.g. http://127.0.0.1:8089")
    parser.add_argument("--service-account", required=True, help="service-account JSON (token_uri = the simulator's)")
    parser.add_argument("-n", type=int, default=20000, help="messages to send (default 20000)")
    parser.add_argument("--chunk", type=int, default=500, help="messages per send_each call (at most 500)")
    parser.add_argument("--salt", type=int, default=0x5A, help="distinguishes this run's tokens from others'")
    parser.add_argument("--json", action="store_true", help="print the result as one JSON object")
    args = parser.parse_args()
    if args.n <= 0:
        parser.error("-n: must be positive")
    if not 1 <= args.chunk <= 500:
        parser.error("--chunk: 1 to 500 (send_each takes at most 500 messages)")

    try:
        import firebase_admin
        import requests
        from firebase_admin import _http_client, credentials, messaging
        from google.oauth2 import service_account as google_service_account
    except ImportError as error:
        sys.exit(f"bench-firebase-admin: {error}; install firebase-admin into a venv (see the script's docstring)")

    try:
        with open(args.service_account) as file:
            token_uri = json.load(file)["token_uri"]
    except (OSError, ValueError, KeyError) as error:
        sys.exit(f"bench-firebase-admin: --service-account: cannot read its token_uri: {error}")
    endpoint = args.endpoint.rstrip("/")
    messaging._MessagingService.FCM_URL = endpoint + "/v1/projects/{0}/messages:send"
    # google-auth signs every assertion with aud = Google's token URL whatever the file's token_uri says; the
    # simulator, like Google, wants the URL of the endpoint that receives it.
    google_service_account._GOOGLE_OAUTH2_TOKEN_ENDPOINT = token_uri
    # firebase-admin 7.7 calls Message.token deprecated in favour of fid, but FCM HTTP v1's field is token.
    warnings.filterwarnings("ignore", message="Message.token is deprecated")
    try:
        credential = credentials.Certificate(args.service_account)
    except (OSError, ValueError) as error:
        sys.exit(f"bench-firebase-admin: --service-account: {error}")
    app = firebase_admin.initialize_app(credential, name="paperboy-bench")
    service = messaging._get_messaging_service(app)
    service._client.session.mount(
        endpoint,
        requests.adapters.HTTPAdapter(pool_connections=100, pool_maxsize=100, max_retries=_http_client.DEFAULT_RETRY_CONFIG),
    )

    data = {
        "edition": "2026-11-24-morning",
        "manifest": "https://cdn.example.com/e/2026-11-24-morning.json",
        "tier": "full",
        "deadline": "2026-11-24T06:30:00Z",
        "fetch": json.dumps(["https://cdn.example.com/e/2026-11-24-morning/front.json",
                             "https://cdn.example.com/e/2026-11-24-morning/top.json"], separators=(",", ":")),
    }
    android = messaging.AndroidConfig(priority="normal", ttl=3600, collapse_key="daily-paper")

    accepted = 0
    failures = {}
    cpu_before = time.process_time()
    start = time.perf_counter()
    for first in range(0, args.n, args.chunk):
        messages = [
            messaging.Message(data=data, android=android, token=token(index, args.salt))
            for index in range(first, min(first + args.chunk, args.n))
        ]
        batch = messaging.send_each(messages, app=app)
        accepted += batch.success_count
        for response in batch.responses:
            if not response.success:
                reason = f"{type(response.exception).__name__}: {response.exception}"
                failures[reason] = failures.get(reason, 0) + 1
    seconds = time.perf_counter() - start
    cpu = time.process_time() - cpu_before

    result = {
        "library": f"firebase-admin {firebase_admin.__version__}",
        "notifications": args.n,
        "accepted": accepted,
        "failed": args.n - accepted,
        "seconds": seconds,
        "notificationsPerSecond": args.n / seconds,
        "cpuSecondsPer100k": cpu / args.n * 100000,
        "peakRSSMegabytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }
    if args.json:
        print(json.dumps(result, sort_keys=True))
    else:
        print(f"{result['library']}: {args.n} messages in {seconds:.2f} s, {result['notificationsPerSecond']:.0f} per s, "
              f"{result['cpuSecondsPer100k']:.2f} CPU s per 100k, peak RSS {result['peakRSSMegabytes']:.0f} MB")
    if failures:
        for reason, count in sorted(failures.items(), key=lambda item: -item[1])[:5]:
            print(f"bench-firebase-admin: {count} not accepted: {reason}", file=sys.stderr)
        sys.exit(f"bench-firebase-admin: {args.n - accepted} of {args.n} messages were not accepted")


if __name__ == "__main__":
    main()
