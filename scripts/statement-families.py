#!/usr/bin/env python3
"""PostgreSQL's work per statement family, from a pg_stat_statements dump.

Usage: scripts/statement-families.py DUMP --deliveries N [--cpu-seconds S] [--json] [--top K]
  DUMP           a JSON array of {"calls", "exec_ms", "plan_ms", "rows", "query"}, as bench-broadcast.sh writes it
                 (pg_stat_statements between a reset and the dump)
  --deliveries N the deliveries recorded meanwhile (the unit: "per 1,000 deliveries")
  --cpu-seconds S PostgreSQL's processes' CPU meanwhile (/proc): each family's share of the statements' time is
                 turned into CPU, and what no statement explains (connection handling, the protocol, autovacuum,
                 the WAL and background writers) is its own line
  --top K        also list the K costliest statements (first 100 characters of each)
A statement's time (execution + planning) is wall time inside the backend: with the data in memory, fsync off, no
lock waits and a core to itself it is CPU; a statement that waits on a lock, or for a core on a busy machine, shows
here longer than in the processes' CPU. Statements run inside others (foreign key checks, functions) are counted in
the statement that ran them (scripts/with-postgres.sh sets pg_stat_statements.track = top).
"""
import argparse
import json
import re
import sys

# The first pattern a statement matches names its family; the order matters (more specific first). A statement's text
# here is pg_stat_statements', with every constant replaced by a parameter (`OFFSET 0` reads `OFFSET $5`), so the
# patterns of the receipts, the tally and the workers' periodic reads come before the carve's, whose `OFFSET $` the
# tally step's `OFFSET 0` would otherwise match. scripts/test_statement_families.py holds the real statements of a
# morning to these families.
FAMILIES = [
    ("transaction", r"^\s*(BEGIN|COMMIT|ROLLBACK|START TRANSACTION)\b"),
    # The bench's own probes (bench-broadcast.sh watching pg_stat_activity for the wave-2 count, and its dumps), not
    # Paperboy's.
    ("bench: its own probes", r"FROM pg_stat_activity WHERE state = \$1 AND pid <> pg_backend_pid\(\)|pg_stat_statements"),
    ("receipts: stored in groups", r"FROM unnest\(\$1::bigint\[\], \$2::bytea\[\]"),
    ("receipts: stored one at a time", r"INSERT INTO receipts"),
    ("receipts: the tally (step, recount)",
     r"coalesce\(r\.provider, \(SELECT d\.provider|INSERT INTO receipt_tallies|receipt_tally_failures|receipt_tally_recounts|UPDATE receipt_tally_state"
     r"|s\.counted_through::text, least\("),
    ("wave 2: audience count", r"INSERT INTO wave_members"),
    ("plan: the audience by cohort, the broadcast's rows",
     r"SELECT \(\(d\.cohort_key::bigint \+|SELECT EXISTS \(SELECT \$\d+ FROM devices d WHERE d\.app_id"
     r"|INSERT INTO broadcast_cohorts|INSERT INTO broadcast_waves|INSERT INTO broadcasts|broadcast_counts"),
    ("worker: gauges, holds, sender status (periodic)", r"coalesce\(t\.planned|WITH pairs AS \(|WITH waiting AS \("),
    ("lease: take over", r"UPDATE broadcast_batches\s+SET lease_owner = \$\d+, lease_expires_at"),
    ("lease: due cohort", r"FROM broadcast_cohorts c\s+JOIN broadcast_waves w .*FOR UPDATE OF c SKIP LOCKED"),
    ("lease: carve with targets", r"WITH first AS MATERIALIZED \(\s*SELECT d\.id, d\.cohort_key, d\.token"),
    ("targets", r"SELECT d\.id, d\.token, d\.provider"),
    ("lease: carve (boundary, size)", r"(cohort_key|m\.cohort_key) (>=|BETWEEN|<)|OFFSET \$|count\(\*\).*cohort_key"),
    ("lease: cohort cursor", r"UPDATE broadcast_cohorts SET next_key"),
    ("lease: batch row", r"INSERT INTO broadcast_batches|FROM broadcast_batches bb\s+JOIN broadcast_cohorts c|UPDATE broadcast_batches SET slot_start"),
    ("slot: origin and wave", r"FROM origins o\s+WHERE o\.id = \(SELECT|UPDATE broadcast_waves\s+SET next_slot|UPDATE origins SET next_slot"),
    ("record: fence", r"UPDATE broadcast_batches SET done_at|SET give_backs = give_backs \+ 1|given_back_by = \$\d+ AND given_back_lease"),
    ("record: ledger", r"INSERT INTO deliveries"),
    ("record: counters", r"UPDATE broadcast_cohorts SET sent = sent"),
    ("record: answer tallies", r"INSERT INTO answer_tallies"),
    ("dormancy: sort by key", r"DELETE FROM uncounted_pushes.*INSERT INTO uncounted_pushes"),
    ("record: pushes kept for dormancy", r"INSERT INTO uncounted_pushes"),
    ("dormancy: anything to count?", r"SELECT EXISTS \(SELECT \$?\d+ FROM uncounted_pushes|WITH RECURSIVE ids"),
    ("dormancy: count (device_pushes)", r"device_pushes|unanswered|FROM uncounted_pushes"),
    ("record: deactivations", r"UPDATE devices SET active = false|deactivation_holds|INSERT INTO held_deactivations"),
    ("lease: renew", r"UPDATE broadcast_batches b SET lease_expires_at"),
    ("poll: next due", r"SELECT min\(due\) FROM"),
    ("foreign key checks", r"FOR KEY SHARE OF x"),
    ("registrations", r"INSERT INTO devices"),
    # The status (GET /v1/broadcasts/{id}, `broadcast status`) and the console: their reads of the tallies, the
    # receipts' lag, the workers' pauses and the holds, and the console's samples and snapshots.
    ("status and console",
     r"FROM broadcast_waves|FROM broadcast_cohorts|FROM broadcasts|FROM receipt_tally_state s\s+LEFT JOIN receipt_tallies"
     r"|count\(\*\) FILTER \(WHERE o\.waiting_since IS NULL\)|jsonb_array_elements\(w\.pauses|SELECT h\.app_id, h\.environment"
     r"|console_samples|console_snapshots"),
]
COMPILED = [(name, re.compile(pattern, re.S | re.I)) for name, pattern in FAMILIES]


def family(query: str) -> str:
    for name, pattern in COMPILED:
        if pattern.search(query):
            return name
    return "other"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dump")
    parser.add_argument("--deliveries", type=int, required=True)
    parser.add_argument("--cpu-seconds", type=float)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--top", type=int, default=0)
    args = parser.parse_args()
    rows = json.load(open(args.dump)) or []
    if args.deliveries <= 0:
        print("statement-families: --deliveries must be positive", file=sys.stderr)
        return 2
    per = 1000 / args.deliveries
    totals: dict[str, dict[str, float]] = {}
    for row in rows:
        name = family(row["query"])
        t = totals.setdefault(name, {"calls": 0, "ms": 0.0, "rows": 0})
        t["calls"] += row["calls"]
        t["ms"] += row["exec_ms"] + row.get("plan_ms", 0.0)
        t["rows"] += row["rows"]
    statement_ms = sum(t["ms"] for t in totals.values())
    cpu_ms = args.cpu_seconds * 1000 if args.cpu_seconds is not None else None
    families = []
    for name, t in sorted(totals.items(), key=lambda kv: -kv[1]["ms"]):
        families.append({
            "family": name,
            "callsPer1000": round(t["calls"] * per, 2),
            "statementMsPer1000": round(t["ms"] * per, 2),
            "share": round(t["ms"] / statement_ms, 3) if statement_ms else 0,
            "msPerCall": round(t["ms"] / t["calls"], 3) if t["calls"] else None,
            # The processes' CPU shared out as the statements' time is: an estimate (see above).
            "cpuMsPer1000": round(cpu_ms * per * t["ms"] / statement_ms, 2) if cpu_ms is not None and statement_ms else None,
        })
    result = {
        "deliveries": args.deliveries,
        "statementMsPer1000": round(statement_ms * per, 2),
        "callsPer1000": round(sum(t["calls"] for t in totals.values()) * per, 1),
        "cpuMsPer1000": round(cpu_ms * per, 2) if cpu_ms is not None else None,
        # Negative: the statements waited (for locks, for a core) longer than PostgreSQL worked outside them.
        "outsideStatementsMsPer1000": round((cpu_ms - statement_ms) * per, 2) if cpu_ms is not None else None,
        "families": families,
    }
    if args.top:
        top = sorted(rows, key=lambda r: -(r["exec_ms"] + r.get("plan_ms", 0.0)))[: args.top]
        result["top"] = [{"family": family(r["query"]), "calls": r["calls"], "ms": round(r["exec_ms"] + r.get("plan_ms", 0.0), 1),
                          "query": " ".join(r["query"].split())[:100]} for r in top]
    if args.json:
        print(json.dumps(result))
        return 0
    print(f"PostgreSQL per 1,000 deliveries ({args.deliveries:,} deliveries): statements {result['statementMsPer1000']} ms"
          f" in {result['callsPer1000']} calls" + (f"; processes' CPU {result['cpuMsPer1000']} ms, outside statements"
                                                   f" {result['outsideStatementsMsPer1000']} ms" if cpu_ms is not None else ""))
    print(f"  {'family':50} {'calls':>8} {'ms':>8} {'share':>6} {'ms/call':>8} {'CPU ms':>8}")
    for f in families:
        print(f"  {f['family']:50} {f['callsPer1000']:>8} {f['statementMsPer1000']:>8} {f['share'] * 100:>5.1f}% {f['msPerCall'] or 0:>8}"
              f" {f['cpuMsPer1000'] if f['cpuMsPer1000'] is not None else '':>8}")
    for t in result.get("top", []):
        print(f"  top: {t['ms']:>9} ms {t['calls']:>7} calls [{t['family']}] {t['query']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
