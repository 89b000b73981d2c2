"""scripts/statement-families.py against the statements of a real morning.

testdata/morning-statements.json holds the text of every statement pg_stat_statements recorded over a 100,000-device
morning (`BENCH_KEEP=… scripts/bench-broadcast.sh --devices 100000 --capacity 4000/s --morning --short-interval
--watch`, 2026-12-05, `05cfb92`): constants are parameters there, as the script sees them. Each statement below is
found by a fragment of its Swift source and must land in the family named beside it, written by hand from the
source, not from the script's answer. Until 2026-12-05 the receipt tally's step (its `OFFSET 0` reads `OFFSET $n`),
the holds check and wave 2's audience count were counted as "lease: carve (boundary, size)", and the workers' gauges
and the status's reads of the tallies as "receipts".

Run: python3 -m pytest -q scripts/test_statement_families.py
"""
import importlib.util
import json
import pathlib

import pytest

HERE = pathlib.Path(__file__).parent
_spec = importlib.util.spec_from_file_location("statement_families", HERE / "statement-families.py")
families = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(families)

STATEMENTS = json.loads((HERE / "testdata" / "morning-statements.json").read_text())

# (a fragment that names one statement, the Swift source it comes from, its family)
EXPECTED = [
    ("FROM unnest($1::bigint[], $2::bytea[]", "Statements/RecordReceipts.swift", "receipts: stored in groups"),
    ("WITH device AS ( SELECT id, provider FROM devices d", "Statements/RecordReceipt.swift", "receipts: stored one at a time"),
    ("coalesce(r.provider, (SELECT d.provider", "Receipts/ReceiptTallies.swift (the step)", "receipts: the tally (step, recount)"),
    ("SELECT s.counted_through::text, least(", "Receipts/ReceiptTallies.swift (the lock)", "receipts: the tally (step, recount)"),
    ("UPDATE receipt_tally_state SET counted_through", "Receipts/ReceiptTallies.swift", "receipts: the tally (step, recount)"),
    ("LEFT JOIN receipt_tally_recounts", "Receipts/ReceiptTallies+Recount.swift", "receipts: the tally (step, recount)"),
    ("FROM receipt_tally_state s LEFT JOIN receipt_tallies t", "the status's tallies", "status and console"),
    ("INSERT INTO wave_members", "the follow-up wave's count", "wave 2: audience count"),
    ("SELECT ((d.cohort_key::bigint +", "the plan's count of the audience by cohort", "plan: the audience by cohort, the broadcast's rows"),
    ("coalesce(t.planned,", "Broadcasts/BroadcastRepository+Gauges.swift", "worker: gauges, holds, sender status (periodic)"),
    ("WITH pairs AS (", "Holds/ProviderHoldRepository.swift", "worker: gauges, holds, sender status (periodic)"),
    ("WITH waiting AS (", "Workers/SenderStatusRepository.swift", "worker: gauges, holds, sender status (periodic)"),
    ("WITH first AS MATERIALIZED ( SELECT d.id, d.cohort_key, d.token", "WaveAudience (wave 1's carve)", "lease: carve with targets"),
    ("SELECT d.id, d.token, d.provider, d.platform", "BroadcastRepository+Dispatch.swift (targetsQuery)", "targets"),
    ("WITH first AS ( SELECT cohort_key AS k FROM wave_members", "a follow-up batch's boundary", "lease: carve (boundary, size)"),
    ("INSERT INTO deliveries", "the ledger", "record: ledger"),
    ("UPDATE broadcast_cohorts SET sent = sent", "the cohort's counters", "record: counters"),
    ("INSERT INTO answer_tallies", "the breaker's evidence", "record: answer tallies"),
    ("INSERT INTO uncounted_pushes (broadcast_id, cohort, device_ids) VALUES", "pushes kept for dormancy", "record: pushes kept for dormancy"),
    ("SELECT count(*) FROM pg_stat_activity WHERE state = $1", "bench-broadcast.sh's watch", "bench: its own probes"),
    ("count(*) FILTER (WHERE o.waiting_since IS NULL)", "the status's receipts' lag", "status and console"),
    ("INSERT INTO console_samples", "the console", "status and console"),
]


def normalized(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.parametrize("fragment,source,expected", EXPECTED, ids=[e[0][:40] for e in EXPECTED])
def test_statement_lands_in_its_family(fragment, source, expected):
    found = [s for s in STATEMENTS if fragment in normalized(s)]
    assert found, f"no statement of the morning contains {fragment!r} ({source})"
    for statement in found:
        assert families.family(statement) == expected, f"{source}: {normalized(statement)[:160]}"


def test_the_dormancy_count_and_its_sort_are_told_apart():
    # Both start `WITH taken AS ( DELETE FROM uncounted_pushes`: the sort writes the rows back, the count upserts.
    taken = [s for s in STATEMENTS if normalized(s).startswith("WITH taken AS ( DELETE FROM uncounted_pushes")]
    assert len(taken) == 2
    assert sorted(families.family(s) for s in taken) == ["dormancy: count (device_pushes)", "dormancy: sort by key"]


def test_nothing_that_touches_a_receipt_or_a_tally_is_a_lease():
    for statement in STATEMENTS:
        text = normalized(statement)
        if "receipt" in text or "wave_members (broadcast_id, wave, cohort_key, device_id) SELECT" in text:
            assert not families.family(statement).startswith("lease:"), text[:160]


def test_the_status_in_one_statement_is_the_status():
    # testdata/status-statement.txt: `GET /v1/broadcasts/{id}` since 2026-12-05 (Broadcasts/BroadcastStatus.swift), one
    # prepared statement, as pg_stat_statements recorded it (re-recorded after migration 0041). It reads the receipt
    # and ready-at-open tallies, the cohorts and the holds: it must not be counted as the receipts', the tally's or a
    # lease's.
    text = (HERE / "testdata" / "status-statement.txt").read_text()
    assert "jsonb_each_text" in text and "WHERE b.id = $1" in text
    assert families.family(text) == "status and console"
