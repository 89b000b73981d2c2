#!/usr/bin/env python3
"""What a schemathesis run really exercised, from its HAR report (scripts/schemathesis.sh).

Usage: scripts/schemathesis-coverage.py SPEC HAR [--name NAME] [--require-2xx] [--forbid-429] [--exclude OPERATION_ID]...

Maps every request of the HAR to the operation of SPEC (openapi.yaml) whose method and path template it fits
(requests that fit none, such as the undeclared methods the checks send, count for no operation) and prints

    NAME: N of M operations answered 2xx at least once

then the operations that never did, with what they answered instead, and the operations that got 429. M counts
the operations of SPEC less the `--exclude`d ones (operations the run left out). Exits 1 with `--require-2xx` when
an operation of M never answered 2xx, and with `--forbid-429` when any request got 429 (`rate_limited`: a run
whose requests are throttled tests nothing behind the limit).
"""

import argparse
import collections
import json
import re
import sys
import urllib.parse

import yaml

METHODS = ("get", "put", "post", "delete", "patch", "head", "options", "trace")


def operations(spec):
    """(operation id, method, path template, compiled path pattern), the most literal templates first."""
    found = []
    for template, item in spec.get("paths", {}).items():
        pattern = "".join(
            "[^/]+" if part.startswith("{") else re.escape(part)
            for part in re.split(r"(\{[^}]+\})", template)
            if part
        )
        literal = len(re.sub(r"\{[^}]+\}", "", template))
        for method in METHODS:
            if method in item:
                operation_id = item[method].get("operationId") or f"{method.upper()} {template}"
                found.append((literal, operation_id, method.upper(), template, re.compile(f"^{pattern}$")))
    found.sort(key=lambda entry: -entry[0])
    return [entry[1:] for entry in found]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("spec")
    parser.add_argument("har")
    parser.add_argument("--name", default="run")
    parser.add_argument("--require-2xx", action="store_true", help="exit 1 when an operation never answered 2xx")
    parser.add_argument("--forbid-429", action="store_true", help="exit 1 when any request got 429")
    parser.add_argument("--exclude", action="append", default=[], metavar="OPERATION_ID")
    arguments = parser.parse_args()

    with open(arguments.spec) as file:
        spec = yaml.safe_load(file)
    known = operations(spec)
    ids = [operation_id for operation_id, *_ in known]
    unknown = sorted(set(arguments.exclude) - set(ids))
    if unknown:
        print(f"{arguments.name}: --exclude names no operation of the spec: {', '.join(unknown)}", file=sys.stderr)
        return 2
    counted = [operation_id for operation_id in sorted(set(ids)) if operation_id not in arguments.exclude]

    with open(arguments.har) as file:
        entries = json.load(file)["log"]["entries"]
    statuses = collections.defaultdict(collections.Counter)
    unmatched = 0
    for entry in entries:
        method = entry["request"]["method"].upper()
        path = urllib.parse.urlsplit(entry["request"]["url"]).path
        for operation_id, operation_method, _, pattern in known:
            if method == operation_method and pattern.match(path):
                statuses[operation_id][entry["response"]["status"]] += 1
                break
        else:
            unmatched += 1

    def answered(operation_id):
        return ", ".join(f"{status} ×{count}" for status, count in sorted(statuses[operation_id].items())) or "no request"

    reached = [operation_id for operation_id in counted if any(200 <= status < 300 for status in statuses[operation_id])]
    missed = [operation_id for operation_id in counted if operation_id not in reached]
    limited = [operation_id for operation_id in sorted(statuses) if statuses[operation_id][429]]
    print(
        f"{arguments.name}: {len(reached)} of {len(counted)} operations answered 2xx at least once"
        f" ({len(entries)} requests, {unmatched} to no operation of the spec"
        + (f"; not run: {', '.join(arguments.exclude)}" if arguments.exclude else "")
        + ")"
    )
    for operation_id in missed:
        print(f"  never 2xx: {operation_id} ({answered(operation_id)})")
    for operation_id in limited:
        print(f"  429 ×{statuses[operation_id][429]}: {operation_id} ({answered(operation_id)})")
    problems = []
    if arguments.require_2xx and missed:
        problems.append(f"{len(missed)} operations never answered 2xx: {', '.join(missed)}")
    if arguments.forbid_429 and limited:
        problems.append(f"{len(limited)} operations answered 429: {', '.join(limited)}")
    if problems:
        print(f"{arguments.name}: FAILED: {'; '.join(problems)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
