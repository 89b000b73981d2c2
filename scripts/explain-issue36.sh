#!/usr/bin/env bash
# The statements issue 36 changed, explained (ANALYZE, BUFFERS) at 1,000,000 devices, on a database of its own:
#   scripts/with-postgres.sh scripts/explain-issue36.sh      (after swift build -c release --product paperboy)
# A finished broadcast of the edition reached every device and a third of them answered (a wave 2's audience then
# probes the ledger and the receipts per device). Their SQL is read from the Swift sources (RegisterDevice, RecordReceipts with RecordReceipt.keepOrUpgrade,
# WaveAudience.condition and batchTargetsQuery (the carve's one read of a new batch), memberExtentQuery, the record's ledgerQuery and the count after wave 1, countPushes, run inside a
# rolled-back transaction), prepared with the parameter types serve and the
# workers bind, and run once with the generic plan forced (what a connection reuses after five executions); the
# carve's read, which the worker sends unprepared (planned with its values each time), with a custom plan.
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
P=${PAPERBOY:-.build/release/paperboy}
$P migrate 2>&1 | tail -1
openssl ecparam -name prime256v1 -genkey -noout 2>/dev/null | openssl pkcs8 -topk8 -nocrypt > "$tmp/key.p8"
$P apps add --bundle-id com.example.news --team-id ABCDE12345 --key-id KEY1234567 --key-file "$tmp/key.p8" >/dev/null
$P publications add morning --app 1 --title Morning >/dev/null
$P devices seed --app 1 --count 1000000 --publication morning 2>&1 | tail -1
psql -X -q -c "INSERT INTO editions (id, publication_id, issue_date, deadline, manifest) VALUES ('00000000-0000-0000-0000-00000000000a', 1, date '2026-11-23', now() + interval '1 day', '{}')" \
    -c "INSERT INTO device_pushes (device_id, pushed_edition) SELECT id, '00000000-0000-0000-0000-00000000000a' FROM devices" \
    -c "INSERT INTO wave_members (broadcast_id, wave, cohort_key, device_id) SELECT '00000000-0000-0000-0000-0000000000bb', 2, cohort_key, id FROM devices WHERE id % 3 = 0" \
    -c "INSERT INTO broadcasts (id, edition_id, environment, state, plan, finished_at) VALUES (md5('b0')::uuid, '00000000-0000-0000-0000-00000000000a', 0, 'completed', '{}', now() - interval '90 minutes')" \
    -c "INSERT INTO broadcasts (id, edition_id, environment, state, plan) VALUES ('00000000-0000-0000-0000-0000000000bb', '00000000-0000-0000-0000-00000000000a', 0, 'running', '{}')" \
    -c "INSERT INTO deliveries (device_id, broadcast_id, wave, cohort, background, sent_at, outcome) SELECT id, md5('b0')::uuid, 1, 0, true, now() - interval '2 hours', 'accepted' FROM devices" \
    -c "INSERT INTO receipts (device_id, edition_id, result) SELECT id, '00000000-0000-0000-0000-00000000000a', 'newData' FROM devices WHERE id % 3 = 1" \
    -c 'VACUUM ANALYZE'
python3 - > "$tmp/explain.sql" <<'PY'
import re
def literal(path, name):
    text = open(path).read()
    m = re.search(r'static let ' + name + r' = """\n(.*?)\n\s*"""', text, re.S)
    return m.group(1)
def template(path, func):
    text = open(path).read()
    m = re.search(r'func ' + func + r'\(.*?""\"\n(.*?)\n\s*"""', text, re.S)
    return m.group(1)
keep = literal("Sources/PaperboyStore/Statements/RecordReceipt.swift", "keepOrUpgrade")
register = literal("Sources/PaperboyStore/Statements/RegisterDevice.swift", "sql")
receipts = literal("Sources/PaperboyStore/Statements/RecordReceipts.swift", "sql").replace(r"\(RecordReceipt.keepOrUpgrade)", keep)
condition = literal("Sources/PaperboyStore/Broadcasts/WaveAudience.swift", "condition")
columns = re.search(r'let columns = "(.*?)"', open("Sources/PaperboyStore/Broadcasts/WaveAudience.swift").read()).group(1)
carve = template("Sources/PaperboyStore/Broadcasts/WaveAudience.swift", "batchTargetsQuery").replace("{audience}", condition).replace("\\(columns)", columns)
recent = re.search(r'func recentBackgroundPushes\(.*?\n\s*"(.*?)"\n', open("Sources/PaperboyStore/Broadcasts/WaveAudience.swift").read(), re.S).group(1)
carve = re.sub(r'\\\(Self\.recentBackgroundPushes\(of: "([\w.]+)", since: "(\$\d+)"\)\)',
               lambda m: recent.replace("\\(device)", m.group(1)).replace("\\(since)", m.group(2)), carve)
members = template("Sources/PaperboyStore/Broadcasts/WaveAudience.swift", "memberExtentQuery")
e = "'00000000-0000-0000-0000-00000000000a'"
print("SET plan_cache_mode = force_generic_plan;")
print(f"PREPARE register (bigint, text[], bigint, smallint, smallint, smallint, integer, bytea, boolean, boolean, smallint, text, text, text, text, text, boolean) AS {register};")
print("\\echo == PUT /v1/devices/{token}: a new device (RegisterDevice, generic plan)")
print("EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) EXECUTE register (1, ARRAY['morning'], 1, 0, 0, 0, 12345, sha256('new'::bytea), true, false, 2, 'Asia/Tokyo', '5.1', '17.4', 'iPad13,1', 'ja_JP', false);")
print("\\echo == PUT /v1/devices/{token}: a known device, updated")
print("SELECT cohort_key AS ck, encode(token, 'hex') AS tk FROM devices WHERE id = 500000 \\gset")
print("EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) EXECUTE register (1, ARRAY['morning'], 1, 0, 0, 0, :ck, decode(:'tk', 'hex'), true, false, 2, 'Asia/Tokyo', '5.1', '17.4', 'iPad13,1', 'ja_JP', false);")
print(f"PREPARE receipts (bigint[], bytea[], bytea[], uuid[], text[], bigint[], float8[], smallint[], smallint[], smallint[], smallint[], smallint[], integer[]) AS {receipts};")
print("\\echo == POST /v1/devices/{token}/receipts: 64 receipts together (RecordReceipts, generic plan)")
print("SELECT ARRAY(SELECT token FROM devices WHERE id % 15000 = 8 LIMIT 64)::text AS toks \\gset")
print("EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) EXECUTE receipts ("
      "array_fill(1::bigint, ARRAY[64]), :'toks'::bytea[], array_fill(''::bytea, ARRAY[64]),"
      f" array_fill({e}::uuid, ARRAY[64]), array_fill('newData'::text, ARRAY[64]), array_fill(100::bigint, ARRAY[64]), array_fill(1.5::float8, ARRAY[64]),"
      " array_fill(1::smallint, ARRAY[64]), array_fill(-1::smallint, ARRAY[64]), array_fill(0::smallint, ARRAY[64]), array_fill(1::smallint, ARRAY[64]),"
      " array_fill(1::smallint, ARRAY[64]), array_fill(20, ARRAY[64]));")
print("SET plan_cache_mode = force_custom_plan;")
print(f"PREPARE carve (bigint, smallint, integer, uuid, bigint, boolean, bigint, bigint, bigint, bigint, bigint, timestamptz) AS {carve};")
print("\\echo == lease: a new batch, its devices and targets read at once, wave 1, 1,000 devices (batchTargetsQuery, custom plan)")
print(f"EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) EXECUTE carve (1, 0, 1, {e}, 1, false, 1, 3, -2147483648, 2147483647, 1000, now() - interval '1 hour');")
print("\\echo == lease: a new batch, its devices and targets read at once, wave 2, 1,000 devices (the audience probes per device)")
print(f"EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) EXECUTE carve (1, 0, 1, {e}, 2, false, 2, 3, -2147483648, 2147483647, 1000, now() - interval '1 hour');")
print("SET plan_cache_mode = force_generic_plan;")
print(f"PREPARE members (uuid, smallint, bigint, bigint, bigint) AS {members};")
print("\\echo == lease: a batch extent from recorded members, 1,000 (memberExtentQuery, generic plan)")
print("EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) EXECUTE members ('00000000-0000-0000-0000-0000000000bb', 2, -2147483648, 2147483647, 1000);")
def numbered(path, func):
    # The builder's text with each interpolation `\(…)` as $1, $2, … in order: the values' order when bound.
    text, out, n, i = template(path, func), "", 0, 0
    while i < len(text):
        if text.startswith("\\(", i):
            depth, j = 1, i + 2
            while depth:
                depth += {"(": 1, ")": -1}.get(text[j], 0)
                j += 1
            n += 1
            out += f"${n}"
            i = j
        else:
            out += text[i]
            i += 1
    return out
ledger = numbered("Sources/PaperboyStore/Broadcasts/BroadcastRepository+Dispatch.swift", "ledgerQuery")
dormancy = numbered("Sources/PaperboyStore/Statements/RequestStatements.swift", "countPushes")
print("SELECT ARRAY(SELECT id FROM devices WHERE id > 400000 ORDER BY id LIMIT 1000)::text AS ids \\gset")
print(f"PREPARE ledger (uuid, smallint, bigint, bigint[], timestamptz[], text[], text[], boolean[]) AS {ledger};")
print("\\echo == record: a batch of 1,000 ledger rows (ledgerQuery, generic plan; rolled back)")
print("BEGIN;")
print("EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) EXECUTE ledger (md5('b1')::uuid, 1, 0, :'ids'::bigint[], array_fill(now(), ARRAY[1000]),"
      " array_fill('accepted'::text, ARRAY[1000]), array_fill(''::text, ARRAY[1000]), array_fill(true, ARRAY[1000]));")
print("ROLLBACK;")
def counters():
    # countersQuery's text with each `\(Self.mergeCounts("column", "$n"))` written out as mergeCounts builds it.
    text = open("Sources/PaperboyStore/Broadcasts/BroadcastRepository+Dispatch.swift").read()
    update = re.search(r'func countersQuery\(.*?unsafeSQL: """\n(.*?)\n\s*"""', text, re.S).group(1)
    merge = re.search(r'func mergeCounts\(.*?"""\n(.*?)\n\s*"""', text, re.S).group(1)
    return re.sub(r'\\\(Self\.mergeCounts\("(\w+)", "(\$\d)"\)\)',
                  lambda m: merge.replace("\\(column)", m.group(1)).replace("\\(parameter)", m.group(2)), update)
print(f"PREPARE counters (bigint, bigint, text, text, uuid, smallint, bigint, text) AS {counters()};")
print("\\echo == record: the counts of a batch added to the counters of its cohort (countersQuery, generic plan; rolled back)")
print("BEGIN;")
print("SET LOCAL session_replication_role = replica;")  # the cohort alone, without its wave's row
print("INSERT INTO broadcast_cohorts (broadcast_id, wave, cohort, starts_at, ends_at, first_key, end_key, next_key, planned)"
      " VALUES (md5('b0')::uuid, 1, 0, now(), now(), 0, 0, 0, 1000000);")
print("UPDATE broadcast_cohorts SET rejected = '{\"BadDeviceToken\": 12}', providers = '{\"apns/sent\": 5000, \"apns/accepted\": 4988}'"
      " WHERE broadcast_id = md5('b0')::uuid;")
print("EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) EXECUTE counters (1000, 998, '{\"BadDeviceToken\": 2}', '{}', md5('b0')::uuid, 1, 0,"
      " '{\"apns/sent\": 1000, \"apns/accepted\": 998, \"apns/BadDeviceToken\": 2}');")
print("ROLLBACK;")
print(f"PREPARE dormancy (uuid, uuid, uuid, bigint, bigint, uuid) AS {dormancy};")
print("\\echo == after wave 1: a key range of 16,384 devices counted towards dormancy, each counted before (countPushes, generic plan; rolled back)")
print("BEGIN;")
# One key range as the sort leaves it (sortPushes, migration 0039): its devices in id order, a row per 1,024.
print("INSERT INTO uncounted_pushes (broadcast_id, cohort, key_range, device_ids)"
      " SELECT md5('b1')::uuid, 0, 24, ARRAY(SELECT generate_series(24 * 16384 + 1024 * i, 24 * 16384 + 1024 * i + 1023)::bigint) FROM generate_series(0, 15) i;")
print("EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) EXECUTE dormancy (md5('b1')::uuid, md5('b1')::uuid, '00000000-0000-0000-0000-00000000000c', 3, 3, md5('b1')::uuid);")
print("ROLLBACK;")
PY
psql -X -q -v ON_ERROR_STOP=1 -f "$tmp/explain.sql"
