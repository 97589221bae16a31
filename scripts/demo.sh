#!/usr/bin/env bash
# Sets up everything (scripts/setup.sh), then runs a live demo: sluiced on an embedded
# SQLite file under var/demo/, the queue `report-export` with three tenants on
# different tiers (examples/sluice.json), two workers, a bursty submitter, and a view
# of queue depth per tenant every second. Idempotent: each run starts a fresh demo DB.
# Usage: scripts/demo.sh [seconds]   (default 30; Ctrl-C stops it early)
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION="${1:-30}"
BUILD_DIR="${BUILD_DIR:-build}"
scripts/setup.sh "$BUILD_DIR" sluiced sluice-demo-worker sluice-demo-submitter

DATA=var/demo
mkdir -p "$DATA"
rm -f "$DATA"/sluice.db "$DATA"/sluice.db-wal "$DATA"/sluice.db-shm "$DATA"/port
export SLUICE_ADMIN_TOKEN="demo-admin-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"

pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap cleanup EXIT INT TERM

"$BUILD_DIR"/server/sluiced --listen 127.0.0.1:0 --port-file "$DATA/port" \
  --db "$DATA/sluice.db" --config examples/sluice.json 2>"$DATA/sluiced.log" &
pids+=($!)
for _ in $(seq 1 200); do [ -s "$DATA/port" ] && break; sleep 0.05; done
[ -s "$DATA/port" ] || { echo "sluiced did not start:"; cat "$DATA/sluiced.log"; exit 1; }
URL="http://127.0.0.1:$(cat "$DATA/port")"
echo "==> sluiced on $URL (database $DATA/sluice.db, log $DATA/sluiced.log)"

admin() { curl -sf -H "Authorization: Bearer $SLUICE_ADMIN_TOKEN" "$@"; }
token() { admin -X POST "$URL/v1/admin/tokens" -d "$1" | jq -r .token; }
WORK=$(token '{"scopes":["work"]}')
tenants=()
for t in acme globex initech; do
  tenants+=(--tenant "$t=$(token "{\"scopes\":[\"submit\"],\"tenant\":\"$t\"}")")
done
echo "==> policy of report-export (rates in jobs/s):"
admin "$URL/v1/admin/queues/report-export" |
  jq -c '{rate, capacity, max_inflight, max_inflight_per_tenant, tenants}'

for w in worker-1 worker-2; do
  "$BUILD_DIR"/examples/sluice-demo-worker --server "$URL" --token "$WORK" --name "$w" &
  pids+=($!)
done
"$BUILD_DIR"/examples/sluice-demo-submitter --server "$URL" "${tenants[@]}" \
  --bursts 3 --burst-size 12 --interval-ms 8000 &
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
