#!/usr/bin/env python3
"""Asks two `paperboy serve`s in turn for the running broadcast's status (GET /v1/broadcasts/{id}) until it ends,
and prints each one's latency while it ran: the A/B of a change to the status under the same load.

Usage: status-poller.py PORT_A PORT_B ADMIN_TOKEN INTERVAL_SECONDS
Finds the newest running broadcast with psql (PG* from the environment), waits up to 10 minutes for one, and stops
after 5,000 requests or 10 minutes, whichever comes first.
"""
import http.client
import json
import subprocess
import sys
import time


def running_broadcast():
    out = subprocess.run(
        ["psql", "-X", "-Atc", "SELECT id FROM broadcasts WHERE state = 'running' ORDER BY created_at DESC LIMIT 1"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()
    return out or None


def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def main():
    port_a, port_b, token, interval = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], float(sys.argv[4])
    deadline = time.time() + 600
    broadcast = None
    while broadcast is None and time.time() < deadline:
        broadcast = running_broadcast()
        time.sleep(0.2)
    if broadcast is None:
        sys.exit("status-poller: no broadcast started within 10 minutes")
    connections = {"A": http.client.HTTPConnection("127.0.0.1", port_a), "B": http.client.HTTPConnection("127.0.0.1", port_b)}
    latencies = {"A": [], "B": []}
    side, state, requests = "A", "running", 0
    while state == "running" and time.time() < deadline and requests < 5000:
        started = time.perf_counter()
        connections[side].request("GET", f"/v1/broadcasts/{broadcast}", headers={"Authorization": f"Bearer {token}"})
        response = connections[side].getresponse()
        body = response.read()
        elapsed = (time.perf_counter() - started) * 1000
        if response.status != 200:
            sys.exit(f"status-poller: {side} answered {response.status}: {body[:200]!r}")
        state = json.loads(body)["state"]
        if state == "running":
            latencies[side].append(elapsed)
        side = "B" if side == "A" else "A"
        requests += 1
        time.sleep(interval / 2)
    for side in "AB":
        values = latencies[side]
        if not values:
            continue
        print(
            f"{side}: {len(values)} requests while running: p50 {percentile(values, 50):.1f} ms, p90 {percentile(values, 90):.1f}, "
            f"p99 {percentile(values, 99):.1f}, max {max(values):.1f}, mean {sum(values) / len(values):.1f}"
        )


if __name__ == "__main__":
    main()
