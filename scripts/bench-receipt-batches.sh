#!/usr/bin/env bash
# The receipts' batch statement (RecordReceipts) by batch size: one session executes it, prepared, REPS times per size
# with that many new receipts of random devices, and the median wall time per statement and per receipt is printed.
# One backend on an otherwise idle database: its wall time is its CPU. Shows what bigger batches can save and what a
# receipt's row costs however big the batch; with AUTO=1 the plan is left to PostgreSQL (plan_cache_mode=auto, as on the
# process's own sessions) instead of forced generic (as on the receipts' sessions).
#
# Usage: scripts/with-postgres.sh scripts/bench-receipt-batches.sh [SIZES...]   (default 1 6 50 200 1000)
#   env: PAPERBOY (binary, default .build-release/release/paperboy), DEVICES (default 1000000), REPS (default 20), AUTO
set -euo pipefail
cd "$(dirname "$0")/.."
paperboy=${PAPERBOY:-.build-release/release/paperboy}
reps=${REPS:-20}
sizes=("${@:-1 6 50 200 1000}")
[ -x "$paperboy" ] || { echo "no $paperboy: build it with swift build -c release --scratch-path .build-release --product paperboy" >&2; exit 1; }
: "${DATABASE_URL:?run me under scripts/with-postgres.sh or set DATABASE_URL and PG*}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if [ "$(psql -X -Atc "SELECT count(*) FROM pg_tables WHERE tablename = 'devices'")" = 0 ]; then
    openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$work/key.p8" 2>/dev/null
    "$paperboy" migrate >/dev/null 2>&1
    "$paperboy" apps add --bundle-id com.example.bench --team-id TEAM123456 --key-id KEY1234567 --key-file "$work/key.p8" >/dev/null
    "$paperboy" publications add morning --app 1 >/dev/null
    "$paperboy" devices seed --app 1 --publication morning --count "${DEVICES:-1000000}" >/dev/null
fi
python3 -c '
import datetime, json, sys
deadline = (datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(hours=3)).replace(microsecond=0)
bundle = {"url": "https://cdn.example.com/bench/large-1.zip", "bytes": 1048576, "sha256": "ab" * 32}
json.dump({"publication": "morning", "issueDate": "2099-12-30", "deadline": deadline.isoformat(),
           "tiers": {"large": {"bundles": [bundle]}}, "pages": [{"number": 1, "title": "Front page"}]}, open(sys.argv[1], "w"))
' "$work/edition.json"
# The benchmark's own edition (issue date 2099-12-30): published once, its receipts removed before each run.
edition=$(psql -X -Atc "SELECT e.id FROM editions e JOIN publications p ON p.id = e.publication_id WHERE p.app_id = 1 AND e.issue_date = '2099-12-30'")
if [ -z "$edition" ]; then
    edition=$("$paperboy" editions publish "$work/edition.json" --app 1 --json | python3 -c 'import json, sys; print(json.load(sys.stdin)["id"])')
fi
psql -X -q -c "DELETE FROM receipts WHERE edition_id = '$edition'" -c 'VACUUM receipts' >/dev/null
# The statement's text, as RecordReceipts.sql builds it (with RecordReceipt.keepOrUpgrade in place).
python3 - "$work/batch.sql" <<'PY'
import sys
batch = open("Sources/PaperboyStore/Statements/RecordReceipts.swift").read().split('static let sql = """', 1)[1].split('"""', 1)[0]
keep = open("Sources/PaperboyStore/Statements/RecordReceipt.swift").read().split('static let keepOrUpgrade = """', 1)[1].split('"""', 1)[0]
open(sys.argv[1], "w").write(batch.replace("\\(RecordReceipt.keepOrUpgrade)", keep))
PY
mode=$([ -n "${AUTO:-}" ] && echo auto || echo force_generic_plan)
maxid=$(psql -X -Atc 'SELECT max(id) FROM devices')
echo "machine: $(nproc) cores; $(psql -X -Atc 'SELECT count(*) FROM devices') devices; plan_cache_mode=$mode; $reps statements per size"
printf '%-8s %14s %16s\n' receipts ms_statement ms_receipt
for n in ${sizes[*]}; do
    {
        echo "SET plan_cache_mode = $mode;"
        echo "PREPARE b(bigint[], bytea[], bytea[], uuid[], text[], bigint[], float8[], smallint[], smallint[], smallint[], smallint[], smallint[], integer[]) AS"
        cat "$work/batch.sql"
        echo ";"
        for _ in $(seq "$reps"); do
            # New receipts of n random devices (of app 1), then the statement alone timed by the server's clock.
            echo "SELECT array_agg(1::bigint) a, array_agg(token) t, array_agg(''::bytea) f, array_agg('$edition'::uuid) e, array_agg('newData'::text) r, array_agg(52428800::bigint) y, array_agg(4.5::float8) s, array_agg(-1::smallint) m FROM devices WHERE id IN (SELECT (random() * ($maxid - 1) + 1)::bigint FROM generate_series(1, $n)) \\gset"
            echo "SELECT clock_timestamp() AS t0 \\gset"
            echo "EXECUTE b(:'a', :'t', :'f', :'e', :'r', :'y', :'s', :'m', :'m', :'m', :'m', :'m', :'m'::integer[]) \\g /dev/null"
            echo "SELECT round((extract(epoch FROM clock_timestamp() - :'t0'::timestamptz) * 1000)::numeric, 3);"
        done
    } | psql -X -q -At -v ON_ERROR_STOP=1 | sort -g | awk -v n="$n" '{ a[NR] = $1 } END { m = a[int((NR + 1) / 2)]; printf "%-8d %14.3f %16.4f\n", n, m, m / n }'
done
