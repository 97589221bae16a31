#!/usr/bin/env bash
# Sets up everything (scripts/setup.sh), then runs a live demo: sluiced on an embedded
# SQLite file under var/demo/, the queue `report-export` with three tenants on
# different tiers (examples/sluice.json), two workers (sluice-worker running the script
# examples/report_export.sh, and the in-process C++ sluice-report-worker), a bursty
# submitter that retries 429s politely, and a view of queue depth per tenant every
# second. Reports land in var/demo/reports/. Idempotent: each run starts a fresh demo DB.
# Usage: scripts/demo.sh [seconds]   (default 30; Ctrl-C stops it early)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
DURATION="${1:-30}"
BUILD_DIR="${BUILD_DIR:-build}"
scripts/setup.sh "$BUILD_DIR" sluiced sluice-worker sluice-report-worker sluice-submit

DATA=var/demo
mkdir -p "$DATA"
rm -rf "$DATA"/sluice.db "$DATA"/sluice.db-wal "$DATA"/sluice.db-shm "$DATA"/port "$DATA"/reports
export SLUICE_ADMIN_TOKEN="demo-admin-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"

pids=()
server_pid=""
# Workers and the submitter stop first (workers finish their running jobs and their
# poll in flight), then the server, so no ack is left undelivered.
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  if [ -n "$server_pid" ]; then
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
}
trap cleanup EXIT INT TERM

"$BUILD_DIR"/server/sluiced --listen 127.0.0.1:0 --port-file "$DATA/port" \
  --db "$DATA/sluice.db" --config examples/sluice.json 2>"$DATA/sluiced.log" &
server_pid=$!
for _ in $(seq 1 200); do [ -s "$DATA/port" ] && break; sleep 0.05; done
[ -s "$DATA/port" ] || { echo "sluiced did not start:"; cat "$DATA/sluiced.log"; exit 1; }
URL="http://127.0.0.1:$(cat "$DATA/port")"
echo "==> sluiced on $URL (database $DATA/sluice.db, log $DATA/sluiced.log)"

admin() { curl -sf -H "Authorization: Bearer $SLUICE_ADMIN_TOKEN" "$@"; }
demo_tokens  # WORK, SLUICE_TOKEN_ACME, _GLOBEX, _INITECH
echo "==> policy of report-export (rate and capacity in cost units; a report costs 1 + rows/20):"
admin "$URL/v1/admin/queues/report-export" |
  jq -c '{rate, capacity, max_inflight, max_inflight_per_tenant, tenants}'

# worker-1: any command per job (here a shell script); worker-2: the C++ library.
SLUICE_TOKEN="$WORK" REPORT_DIR="$DATA/reports" REPORT_MS_PER_ROW=20 \
  "$BUILD_DIR"/worker/sluice-worker --server "$URL" --queue report-export --concurrency 2 \
  --worker-id worker-1 --wait-ms 2000 -- examples/report_export.sh &
pids+=($!)
SLUICE_TOKEN="$WORK" "$BUILD_DIR"/examples/sluice-report-worker --server "$URL" \
  --concurrency 2 --out "$DATA/reports" --ms-per-row 20 --worker-id worker-2 --wait-ms 2000 &
pids+=($!)
"$BUILD_DIR"/examples/sluice-submit --server "$URL" --tenant acme --tenant globex \
  --tenant initech --jobs 12 --bursts 3 --interval-ms 8000 --rows-max 30 --deadline-in-ms 60000 &
pids+=($!)

depth() {
  admin "$URL/v1/admin/queues/report-export/tenants" | jq -r '
    [.tenants[] | "\(.tenant)=\(.queued) queued/\(.leased) running"] | join("   ")'
}
end=$((SECONDS + DURATION))
while [ $SECONDS -lt $end ]; do
  sleep 1
  echo "$(date +%T)  [depth] $(depth)"
done
echo "==> final state of every queue:"
admin "$URL/v1/admin/queues" | jq -c '.queues[] | {name, version, stats}'
echo "==> $(find "$DATA/reports" -name '*.csv' | wc -l) reports written under $DATA/reports"
