#!/usr/bin/env bash
# Several sluiced on one PostgreSQL database behind haproxy, and one of them killed
# mid-run. Sets up everything (scripts/setup.sh, which installs haproxy), then:
#   - a private PostgreSQL 15 in a temporary directory (initdb, a free loopback port;
#     as the postgres user when run as root), removed at exit;
#   - 3 sluiced on that database (examples/sluice.json: the queue report-export, three
#     tenants on different tiers), each on its own port;
#   - haproxy on one port in front of them: round-robin per request, health checks on
#     /healthz every 500 ms (down after 2 failures), a refused connection retried on
#     another instance;
#   - the demo's workers (sluice-worker running examples/report_export.sh, and the C++
#     sluice-report-worker) and its bursty submitter (sluice-submit, retrying 429s and
#     errors politely with one Idempotency-Key per job), all through haproxy;
#   - every 2 s: each tenant's queue depth (admin API, through haproxy) and the jobs each
#     instance has handed out (its /metrics, sluice_release_lag_seconds_count);
#   - at KILL_AT seconds, kill -9 of instance 2; haproxy takes it out, the rest goes on;
#   - after DURATION seconds, waits (up to DRAIN_S) until nothing is queued or leased,
#     then checks: every job the submitter had accepted (a 202) is in the database and
#     succeeded, once (the database's succeeded total equals the jobs, and no job has
#     two succeeded completions in the workers' logs).
# Exit status 0 only if nothing was lost. Logs: var/cluster-demo/ (fresh each run).
# Usage: scripts/cluster-demo.sh [seconds]   (default 40; env KILL_AT (15), DRAIN_S (120),
#        BUILD_DIR (build), PGBIN (/usr/lib/postgresql/15/bin))
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$(pwd)"
source scripts/lib.sh
DURATION="${1:-40}"
KILL_AT="${KILL_AT:-15}"
DRAIN_S="${DRAIN_S:-120}"
BUILD_DIR="${BUILD_DIR:-build}"
PGBIN="${PGBIN:-/usr/lib/postgresql/15/bin}"
INSTANCES=3
VICTIM=2
scripts/setup.sh "$BUILD_DIR" sluiced sluice-worker sluice-report-worker sluice-submit
command -v haproxy >/dev/null || { echo "haproxy is missing (scripts/setup.sh installs it)" >&2; exit 1; }

DATA="$ROOT/var/cluster-demo"
rm -rf "$DATA"
mkdir -p "$DATA/reports"
SLUICE_ADMIN_TOKEN="demo-admin-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
export SLUICE_ADMIN_TOKEN

# start_postgres, stop_postgres, psql_do (PGDIR, PGPORT); stop_pid
PIDS=()
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"
client_pids=()  # workers and the submitter: stopped first, so no ack is left undelivered
server_pids=()  # sluiced instances (index = instance - 1); "" once killed
haproxy_pid=""
TMP=""
# shellcheck disable=SC2317  # run by the EXIT trap
cleanup() {
  local p
  for p in "${client_pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${client_pids[@]}"; do wait "$p" 2>/dev/null || true; done
  for p in "${server_pids[@]}"; do [ -n "$p" ] && stop_pid "$p" 10; done
  [ -n "$haproxy_pid" ] && stop_pid "$haproxy_pid" 5
  if [ -n "$PGDIR" ]; then
    stop_postgres keep
    cp "$PGDIR/server.log" "$DATA/postgres.log" 2>/dev/null || true
  fi
  [ -n "$TMP" ] && rm -rf "$TMP"
  return 0
}
trap cleanup EXIT
trap 'exit 130' INT TERM

now() { date +%T; }
free_port() {
  local p
  for _ in $(seq 50); do
    p=$((20000 + RANDOM % 40000))
    ss -Hltn "sport = :$p" 2>/dev/null | grep -q . || { echo "$p"; return 0; }
  done
  return 1
}

# ---- PostgreSQL in a temporary directory ------------------------------------------------
TMP="$(mktemp -d /tmp/sluice-cluster-demo.XXXXXX)"
[ "$(id -u)" -eq 0 ] && chown postgres:postgres "$TMP"
start_postgres "$TMP" -c max_connections=100
psql_do postgres "CREATE DATABASE sluice" >/dev/null
DB="postgres://postgres@127.0.0.1:$PGPORT/sluice"
echo "==> PostgreSQL 15 on 127.0.0.1:$PGPORT (data in $PGDIR, removed at exit), database sluice"

# ---- 3 sluiced on one database ---------------------------------------------------------
ports=()
for ((i = 1; i <= INSTANCES; i++)); do
  "$BUILD_DIR"/server/sluiced --listen 127.0.0.1:0 --port-file "$DATA/port-$i" --db "$DB" \
    --db-pool 4 --config examples/sluice.json --no-access-log 2>"$DATA/sluiced-$i.log" &
  server_pids+=($!)
  for _ in $(seq 1 300); do [ -s "$DATA/port-$i" ] && break; sleep 0.05; done
  [ -s "$DATA/port-$i" ] || { echo "sluiced $i did not start:"; cat "$DATA/sluiced-$i.log"; exit 1; }
  ports+=("$(cat "$DATA/port-$i")")
  echo "==> sluiced $i: pid ${server_pids[-1]}, http://127.0.0.1:${ports[-1]} (log var/cluster-demo/sluiced-$i.log)"
done

# ---- haproxy in front -----------------------------------------------------------------
HAPORT="$(free_port)"
STATSPORT="$(free_port)"
{
  echo "global"
  echo "  maxconn 1000"
  echo "defaults"
  echo "  mode http"
  echo "  timeout connect 2s"
  echo "  timeout client 60s"
  echo "  timeout server 60s"   # above the workers' long-poll wait
  echo "  retries 3"
  echo "  option redispatch 1"  # a refused connection goes to another instance
  echo "  retry-on conn-failure empty-response"
  echo "frontend sluice"
  echo "  bind 127.0.0.1:$HAPORT"
  echo "  default_backend sluiced"
  echo "backend sluiced"
  echo "  balance roundrobin"
  echo "  option httpchk GET /healthz"
  echo "  http-check expect status 200"
  echo "  default-server inter 500ms fall 2 rise 2"
  for ((i = 1; i <= INSTANCES; i++)); do echo "  server s$i 127.0.0.1:${ports[$((i - 1))]} check"; done
  echo "listen stats"
  echo "  bind 127.0.0.1:$STATSPORT"
  echo "  stats enable"
  echo "  stats uri /stats"
} >"$DATA/haproxy.cfg"
haproxy -c -q -f "$DATA/haproxy.cfg"
haproxy -db -f "$DATA/haproxy.cfg" >"$DATA/haproxy.log" 2>&1 &
haproxy_pid=$!
URL="http://127.0.0.1:$HAPORT"
for _ in $(seq 1 100); do curl -fsS --max-time 1 "$URL/healthz" >/dev/null 2>&1 && break; sleep 0.1; done
curl -fsS --max-time 2 "$URL/healthz" >/dev/null || { echo "haproxy does not answer:"; cat "$DATA/haproxy.log"; exit 1; }
echo "==> haproxy on $URL: round-robin over the 3 instances (stats: http://127.0.0.1:$STATSPORT/stats)"
haproxy_status() {  # s1=UP s2=DOWN ...
  curl -fsS --max-time 2 "http://127.0.0.1:$STATSPORT/stats;csv" 2>/dev/null |
    awk -F, '$1 == "sluiced" && $2 ~ /^s[0-9]/ {printf "%s%s=%s", sep, $2, $18; sep = " "}'
}

admin() { curl -sf --max-time 5 -H "Authorization: Bearer $SLUICE_ADMIN_TOKEN" "$@"; }
demo_tokens  # WORK, SLUICE_TOKEN_ACME, _GLOBEX, _INITECH
echo "==> policy of report-export (the same for every instance: it is in the database):"
admin "$URL/v1/admin/queues/report-export" |
  jq -c '{rate, capacity, max_inflight, max_inflight_per_tenant, lease_ms, tenants}'

# ---- workers and the submitter, through haproxy ---------------------------------------
SLUICE_TOKEN="$WORK" REPORT_DIR="$DATA/reports" REPORT_MS_PER_ROW=20 \
  "$BUILD_DIR"/worker/sluice-worker --server "$URL" --queue report-export --concurrency 2 \
  --worker-id worker-1 --wait-ms 2000 -- examples/report_export.sh 2>"$DATA/worker-1.log" &
client_pids+=($!)
SLUICE_TOKEN="$WORK" "$BUILD_DIR"/examples/sluice-report-worker --server "$URL" \
  --concurrency 2 --out "$DATA/reports" --ms-per-row 20 --worker-id worker-2 --wait-ms 2000 \
  2>"$DATA/worker-2.log" &
client_pids+=($!)
"$BUILD_DIR"/examples/sluice-submit --server "$URL" --tenant acme --tenant globex \
  --tenant initech --jobs 12 --bursts 4 --interval-ms 8000 --rows-max 30 \
  --deadline-in-ms 180000 >"$DATA/submitter.log" 2>&1 &
submitter_pid=$!
client_pids+=("$submitter_pid")
echo "==> 2 workers and the bursty submitter (4 bursts of 12 jobs per tenant, 8 s apart), all through haproxy"

depth() {
  admin "$URL/v1/admin/queues/report-export/tenants" | jq -r '
    [.tenants[] | "\(.tenant)=\(.queued)q/\(.leased)r"] | join(" ")' 2>/dev/null || echo "?"
}
last_handouts=()
HANDOUTS=""
# Sets HANDOUTS: the jobs each instance handed out so far (its own counter; the last
# figure seen, once it is killed). Called plainly, not in $(...): it keeps state.
handouts() {
  local i out="" n
  for ((i = 1; i <= INSTANCES; i++)); do
    if [ -z "${server_pids[$((i - 1))]}" ]; then
      n="${last_handouts[$((i - 1))]:-0}(killed)"
    else
      n="$(admin "http://127.0.0.1:${ports[$((i - 1))]}/metrics" |
        awk '/^sluice_release_lag_seconds_count/ {v = $2} END {print v + 0}')" || n="?"
      last_handouts[i - 1]="$n"
    fi
    out="$out${out:+ }s$i=$n"
  done
  HANDOUTS="$out"
}
shown=0
show_submitter() {  # the submitter's new lines since the last call
  local n
  n="$(wc -l <"$DATA/submitter.log")"
  if [ "$n" -gt "$shown" ]; then sed -n "$((shown + 1)),${n}p" "$DATA/submitter.log"; fi
  shown="$n"
}

start=$SECONDS
killed=0
while [ $((SECONDS - start)) -lt "$DURATION" ]; do
  sleep 2
  show_submitter
  handouts
  echo "$(now)  [depth] $(depth)   [handed out] $HANDOUTS   [haproxy] $(haproxy_status)"
  if [ "$killed" = 0 ] && [ $((SECONDS - start)) -ge "$KILL_AT" ]; then
    victim_pid="${server_pids[$((VICTIM - 1))]}"
    kill -KILL "$victim_pid"
    wait "$victim_pid" 2>/dev/null || true
    server_pids[VICTIM - 1]=""
    killed=1
    echo "$(now)  !! kill -9 sluiced $VICTIM (pid $victim_pid) mid-run; haproxy will take it out"
  fi
done

echo "==> $(now) submitting for ${DURATION}s done; waiting (up to ${DRAIN_S}s) for the submitter to finish and the queue to drain"
drained=0
for ((t = 0; t < DRAIN_S; t += 2)); do
  if ! kill -0 "$submitter_pid" 2>/dev/null; then
    stats="$(admin "$URL/v1/admin/queues/report-export" | jq -r '"\(.stats.queued) \(.stats.leased)"' 2>/dev/null || echo "? ?")"
    [ "$stats" = "0 0" ] && { drained=1; break; }
  fi
  sleep 2
  show_submitter
  handouts
  echo "$(now)  [depth] $(depth)   [handed out] $HANDOUTS   [haproxy] $(haproxy_status)"
done
show_submitter
submit_rc=0
wait "$submitter_pid" || submit_rc=$?

# ---- the check: nothing lost, each accepted job completed once --------------------------
accepted="$(awk '/\[submitter\] done / {for (i = 1; i <= NF; i++) if ($i ~ /^accepted=/) {split($i, a, "="); s += a[2]}} END {print s + 0}' "$DATA/submitter.log")"
gave_up="$(awk '/\[submitter\] done / {for (i = 1; i <= NF; i++) if ($i ~ /^gave_up=/) {split($i, a, "="); s += a[2]}} END {print s + 0}' "$DATA/submitter.log")"
replayed="$(awk '/\[submitter\] done / {for (i = 1; i <= NF; i++) if ($i ~ /^replayed=/) {split($i, a, "="); s += a[2]}} END {print s + 0}' "$DATA/submitter.log")"
read -r in_db succeeded other_states < <(psql_do sluice "SELECT count(*), count(*) FILTER (WHERE state = 'succeeded'),
    coalesce(string_agg(DISTINCT state, ',') FILTER (WHERE state <> 'succeeded'), '-')
    FROM jobs WHERE queue = 'report-export'" | tr '|' ' ')
totals="$(admin "$URL/v1/admin/queues/report-export" | jq -c '.totals | {admitted, succeeded, failed, expired, lease_timeouts}')"
total_succeeded="$(jq -r .succeeded <<<"$totals")"
total_admitted="$(jq -r .admitted <<<"$totals")"
# A job's succeeded completions in the workers' logs (the server answered state=succeeded).
twice="$(cat "$DATA"/worker-*.log | grep -o 'id=job_[0-9a-f]* .*state=succeeded' | awk '{print $1}' |
  sort | uniq -d | wc -l)"
ran="$(cat "$DATA"/worker-*.log | grep -o 'id=job_[0-9a-f]* .*state=succeeded' | wc -l)"
reruns="$(psql_do sluice "SELECT count(*) FROM jobs WHERE queue = 'report-export' AND attempt > 1")"

served="$(curl -fsS --max-time 2 "http://127.0.0.1:$STATSPORT/stats;csv" 2>/dev/null |
  awk -F, '$1 == "sluiced" && $2 ~ /^s[0-9]/ {printf "%s%s=%s", sep, $2, $8; sep = " "}
           $1 == "sluiced" && $2 == "BACKEND" {r = $16; d = $17}
           END {printf "; retried %d, redispatched %d", r, d}')"
worker_errors="$(cat "$DATA"/worker-*.log | grep -c 'cannot lease\|ack failed' || true)"
echo
handouts
echo "==> the end: haproxy $(haproxy_status); jobs handed out per instance $HANDOUTS"
echo "   haproxy:   requests sent per instance $served; the workers saw $worker_errors failed requests (lease or ack, retried)"
echo "   submitter: $accepted jobs accepted (202), $gave_up gave up before being accepted, $replayed answers were replays of a 202 lost in transit"
echo "   database:  $in_db jobs, $succeeded succeeded (other states: $other_states); $reruns jobs ran more than once (a lease lost with the killed instance, requeued when it ran out)"
echo "   admin API totals: $totals"
echo "   workers:   $ran succeeded completions logged, $twice jobs completed twice"
echo "   reports:   $(find "$DATA/reports" -name '*.csv' | wc -l) CSV files under var/cluster-demo/reports"
lost=0
[ "$drained" = 1 ] || { echo "!! the queue did not drain within ${DRAIN_S}s"; lost=1; }
[ "$in_db" -ge "$accepted" ] || { echo "!! LOST: $accepted accepted but only $in_db jobs in the database"; lost=1; }
[ "$succeeded" = "$in_db" ] || { echo "!! $((in_db - succeeded)) jobs did not succeed (states: $other_states)"; lost=1; }
# More jobs than 202s: a job committed whose 202 never arrived and that its submitter
# then gave up on: not lost (it ran), but not owed either; said, not failed.
[ "$in_db" -le "$accepted" ] || echo "   note: $((in_db - accepted)) jobs in the database were never acknowledged to the submitter (it gave up on them)"
{ [ "$total_succeeded" = "$in_db" ] && [ "$total_admitted" = "$in_db" ]; } ||
  { echo "!! admin totals (admitted $total_admitted, succeeded $total_succeeded) differ from the $in_db jobs"; lost=1; }
[ "$twice" = 0 ] || { echo "!! $twice jobs completed twice"; lost=1; }
[ "$submit_rc" = 0 ] || echo "   (the submitter exited $submit_rc: $gave_up jobs were never accepted, so they are not owed)"
if [ "$lost" = 0 ]; then
  echo "==> nothing lost: every one of the $accepted accepted jobs completed exactly once, with sluiced $VICTIM killed (-9) mid-run"
else
  echo "==> FAILED: see above; logs in var/cluster-demo/"
fi
exit "$lost"
