#!/usr/bin/env python3
"""How much ordering by wake rate could add, on the demo's fleet model (issue 14, deliverable 4).

Follow-up waves keep each device's spacing: a device is pushed again an interval (20 minutes, Apple's cadence)
after its previous push, so the number of chances it gets before the deadline is fixed by its wave-1 slot. A
follow-up's order can only move a device within its cohort's slot (window / cohorts: 112 s in the demo), which
changes its chances only at the deadline. The one order that matters is wave 1's across the window: this
prints the model's expected held share with wave 1 in random order (what Paperboy does: cohorts are hash
ranges) and with the devices least likely to wake first, and what the second costs the content API (the
edition GETs per push in wave 1's first and last thirds).

An upper bound from the model's own parameters: no run delay (a push near the deadline counts whole) and no
hourly-budget skips. Usage: scripts/wake-order-bound.py [docs/fleets/FLEET.json ...]
"""
import json
import sys

DEFAULTS = {
    "newerShare": 0.6, "wifiShare": 0.75, "chargingShare": 0.7, "swipedAwayShare": 0.05,
    "runChargingOnWiFi": {"newer": 0.9, "older": 0.8}, "runOnWiFi": {"newer": 0.7, "older": 0.5},
    "runChargingOnCellular": {"newer": 0.6, "older": 0.3}, "runOnCellular": {"newer": 0.3, "older": 0.1},
    "failureOnWiFi": 0.02, "failureOnCellular": 0.08,
}
WINDOW, INTERVAL, DEADLINE = 30.0, 20.0, 120.0  # minutes: the demo's defaults


def classes(p):
    """(chance a push leads to a held edition, share of reachable devices) per device class."""
    out = []
    for newer in (True, False):
        for wifi in (True, False):
            for charging in (True, False):
                share = ((p["newerShare"] if newer else 1 - p["newerShare"])
                         * (p["wifiShare"] if wifi else 1 - p["wifiShare"])
                         * (p["chargingShare"] if charging else 1 - p["chargingShare"]))
                key = ("runCharging" if charging else "run") + ("OnWiFi" if wifi else "OnCellular")
                run = p[key]["newer" if newer else "older"]
                out.append((run * (1 - p["failureOnWiFi" if wifi else "failureOnCellular"]), share))
    return out


def chances(slot):
    """Pushes a device slotted at `slot` minutes gets before the deadline."""
    return int((DEADLINE - slot - 1e-9) // INTERVAL) + 1


def held(order, steps=3600):
    """Expected held share with wave 1's slots given to the classes in this order, each a contiguous share."""
    total, start = 0.0, 0.0
    for q, share in order:
        for i in range(steps):
            slot = (start + share * (i + 0.5) / steps) * WINDOW
            total += share / steps * (1 - (1 - q) ** chances(slot))
        start += share
    return total


def random_order(cls, steps=3600):
    return sum(share * sum(1 - (1 - q) ** chances((i + 0.5) / steps * WINDOW) for i in range(steps)) / steps for q, share in cls)


def third_rates(order):
    """Mean chance a push in wave 1's first and last thirds leads to a held edition (GETs per push, less failures)."""
    def mean(lo, hi):
        weight = value = 0.0
        start = 0.0
        for q, share in order:
            overlap = max(0.0, min(start + share, hi) - max(start, lo))
            weight += overlap
            value += overlap * q
            start += share
        return value / weight
    return mean(0, 1 / 3), mean(2 / 3, 1)


for path in sys.argv[1:] or [None]:
    params = dict(DEFAULTS)
    if path:
        params.update(json.load(open(path)))
    cls = classes(params)
    base = random_order(cls)
    ordered = held(sorted(cls))
    first, last = third_rates(sorted(cls))
    mean = sum(q * s for q, s in cls)
    print(f"{path or 'default model'}: held {base * 100:.2f} % in random order, {ordered * 100:.2f} % least likely first "
          f"(+{(ordered - base) * 100:.2f} points); wave 1's wakes per push (edition GETs) {mean:.2f} throughout, "
          f"{first:.2f} in its first third and {last:.2f} in its last ({last / mean:.2f} x the mean)")
