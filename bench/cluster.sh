#!/usr/bin/env bash
# End to end (submit -> lease -> complete over keep-alive HTTP) on one workload, in one
# run on this machine: sluice on SQLite (one instance), sluice on PostgreSQL with 1, 2
# and 3 instances on one database, and pg-boss 10.4.2 on the same PostgreSQL server.
#
# Usage: bench/cluster.sh [rounds]            (default 3; 5 to 6 minutes a round here)
#   env: BUILD_DIR (build); JOBS (20000), TENANTS (10); sluice: SUBMITTERS (48: about
#        pg-boss's PGBOSS_INFLIGHT concurrent sends, and a multiple of 3 instances), WORKERS (8),
#        MAX_JOBS (8), ACK_MODE (lease: a lease's acks ride on the worker's next lease
#        request; batch: one POST /v1/acks per lease; single: one complete per job) for
#        sluice-bench-e2e, spread round-robin over the instances,
#        DB_POOL (8) sluiced --db-pool, INSTANCES ("1 2 3"); pg-boss: PGBOSS_INFLIGHT (50)
#        concurrent sends, PGBOSS_WCONC (4) pollers per queue, PGBOSS_BATCH (100) jobs per
#        fetch; PGBIN (/usr/lib/postgresql/15/bin); KEEP_DATA=1 keeps the data dirs;
#        PROFILE=1 adds, after the rounds, one profiled 3-instance run (below).
#
# The workload, the same for both (like ../shared/peer-bench's pg-boss `--mode single
# --phase concurrent`): JOBS jobs over TENANTS tenants (sluice: one submit token per
# tenant on one queue; pg-boss: one queue per tenant), submitted one per request while
# the workers run; each worker takes jobs and completes each one. Completed jobs/s =
# JOBS / (first submit -> last completion): sluice-bench-e2e reads the last complete's
# 200; pg-boss-throughput.js polls until the database has JOBS jobs completed.
#   sluice: bench/e2e.cc with --server per instance (submitter s and worker w talk to
#     instance s mod K, w mod K); the queue's rate (1e6/s) and capacity (1e7) are far
#     above what the machine can do and it has no caps, so the shaper holds nothing
#     back; every job must be completed exactly once (checked by the client and against
#     the server's totals). Latency: submit sent -> complete answered, per job.
#   pg-boss: bench/peers/pgboss-throughput.js (a copy of the peer's script), installed
#     with npm into var/peers/pgboss; latency there is send -> handler start (it does not
#     time each completion). The check: JOBS distinct jobs completed in pgboss.job.
# PostgreSQL 15 is a private cluster under var/bench/ (bench/lib.sh: initdb, a free
# loopback port, default settings: fsync and synchronous_commit on) with
# max_connections 200 (3 x DB_POOL for sluice; pg-boss opens up to INFLIGHT + 5 and
# TENANTS x WCONC + 5); a fresh database for each run. SQLite: --synchronous FULL.
# Each round runs every configuration, in reverse order on even rounds.
#
# CPU per job, from /proc over the run: sluiced (all instances), the PostgreSQL cluster
# (postmaster, live and reaped children), and the load generator (sluice-bench-e2e or
# the two node processes); "other" is what the rest of the machine used meanwhile
# (/proc/stat busy time less the three), in cores. Handouts per instance: each
# sluiced's sluice_release_lag_seconds_count (one sample per job it handed out).
#
# PROFILE=1: a second private cluster with pg_stat_statements, 3 instances, one run;
# for PROFILE_S (10) seconds from 2 s in, perf record -a -g (-F 499) of the whole
# machine (split by process name: sluiced, postgres, the client, the rest); then statements and transactions per job, backend
# wait states (pg_stat_activity sampled every 0.1 s), the top symbols of each profile.
# Raw outputs: var/bench/cluster-<stamp>-*.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$(pwd)"
# install_missing, bench_outputs, tree_rev, build_targets, kill_pids, remove_data_dirs;
# stop_pid, forget_pid, cpu_ticks, ticks_us_per_job; the private PostgreSQL cluster:
# require_pg_tools, start_postgres, stop_postgres, new_database, psql_do, pg_ticks,
# wal_syncs, xacts; start_sluiced, npm_peer
source "$ROOT/bench/lib.sh"
ROUNDS="${1:-${ROUNDS:-3}}"
BUILD_DIR="${BUILD_DIR:-build}"
JOBS="${JOBS:-20000}"
TENANTS="${TENANTS:-10}"
SUBMITTERS="${SUBMITTERS:-48}"
WORKERS="${WORKERS:-8}"
MAX_JOBS="${MAX_JOBS:-8}"
ACK_MODE="${ACK_MODE:-lease}"
DB_POOL="${DB_POOL:-8}"
INSTANCES="${INSTANCES:-1 2 3}"
PGBOSS_VERSION=10.4.2
PGBOSS_INFLIGHT="${PGBOSS_INFLIGHT:-50}"
PGBOSS_WCONC="${PGBOSS_WCONC:-4}"
PGBOSS_BATCH="${PGBOSS_BATCH:-100}"
PGBIN="${PGBIN:-/usr/lib/postgresql/15/bin}"
KEEP_DATA="${KEEP_DATA:-0}"
PROFILE="${PROFILE:-0}"
PROFILE_S="${PROFILE_S:-10}"
MAX_CONN=200
[[ "$ROUNDS" =~ ^[1-9][0-9]*$ ]] || { echo "rounds must be a positive integer" >&2; exit 2; }

# ---- tools, build, pg-boss ------------------------------------------------------------
tools=(curl jq node=nodejs npm)
[ "$PROFILE" = 1 ] && tools+=(perf=linux-perf)
install_missing "${tools[@]}"

bench_outputs cluster
REV="$(tree_rev . ':!bench' ':!docs' ':!README.md')"

echo "==> building sluiced and sluice-bench-e2e in $BUILD_DIR (working tree of $REV)"
build_targets scripts/setup.sh "$BUILD_DIR" sluiced sluice-bench-e2e
SLUICED="$ROOT/$BUILD_DIR/server/sluiced"
E2E="$ROOT/$BUILD_DIR/bench/sluice-bench-e2e"
PGBOSS_JS="$ROOT/bench/peers/pgboss-throughput.js"
PGBOSS_DIR="$ROOT/var/peers/pgboss"
require_pg_tools
npm_peer "$PGBOSS_DIR" pg-boss "$PGBOSS_VERSION"

# ---- process handling ------------------------------------------------------------------
PIDS=()
DATA_DIRS=()
PG_LOGS=0
save_pg_log() {
  [ -n "$PGDIR" ] || return 0
  PG_LOGS=$((PG_LOGS + 1))
  cp "$PGDIR/server.log" "$PREFIX-postgres-$PG_LOGS.log" 2>/dev/null || true
}
cleanup() {
  kill_pids
  if [ -n "$PGDIR" ]; then
    stop_postgres keep
    save_pg_log
    [ "$KEEP_DATA" = 1 ] || rm -rf "$PGDIR"
  fi
  remove_data_dirs
}
trap cleanup EXIT
trap 'exit 130' INT TERM

ADMIN="bench-admin-$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')"
HZ="$(getconf CLK_TCK)"

busy_ticks() {  # busy clock ticks of the whole machine (all CPUs) so far
  awk '/^cpu / {print $2 + $3 + $4 + $7 + $8 + $9; exit}' /proc/stat
}
now_s() { date +%s.%N; }

handouts() {  # handouts <url>: jobs this instance handed out (its release-lag samples)
  curl -fsS --max-time 5 -H "Authorization: Bearer $ADMIN" "$1/metrics" |
    awk '/^sluice_release_lag_seconds_count/ {n = $2} END {print n}'
}

# One line of results per run, tab-separated, in $RESULTS:
#   round config jobs_per_s submit_per_s p50 p99 sluiced_us pg_us client_us other_cores ok
#   handouts xacts_per_job wal_per_job
RESULTS="$PREFIX-rounds.tsv"
printf 'round\tconfig\tjobs_per_s\tsubmit_per_s\tp50_ms\tp99_ms\tsluiced_us\tpg_us\tclient_us\tother_cores\tok\thandouts\txacts_per_job\twal_syncs_per_job\n' >"$RESULTS"
BAD=0

# run_sluice <round> <sqlite|pgK> <raw-output prefix>
run_sluice() {
  local round="$1" config="$2" file="$3" dir k i db rc=0 urls=() pids=() args=() e2e_args=()
  local w0=0 w1=0 x0=0 x1=0 b0 b1 t0 t1 ok hand="" xj="-" wj="-" client_us other
  dir="$(mktemp -d "$ROOT/$OUT/cluster-data.XXXXXX")"
  DATA_DIRS+=("$dir")
  if [ "$config" = sqlite ]; then
    k=1
    db="$dir/sluice.db"
  else
    k="${config#pg}"
    new_database
    db="$PG_URI"
    args=(--db-pool "$DB_POOL")
  fi
  for ((i = 1; i <= k; i++)); do
    start_sluiced "$db" "$dir/sluiced-$i" "${args[@]}"
    urls+=("$S_URL")
    pids+=("$S_PID")
    e2e_args+=(--server "$S_URL" --sluiced-pid "$S_PID")
  done
  [ "$config" != sqlite ] && e2e_args+=(--pg-pid "$PM_PID") && w0="$(wal_syncs)" && x0="$(xacts "$PG_DB")"
  b0="$(busy_ticks)" t0="$(now_s)"
  { TIMEFORMAT='%U %S'; time SLUICE_ADMIN_TOKEN="$ADMIN" timeout -k 5 900 "$E2E" "${e2e_args[@]}" \
      --jobs "$JOBS" --tenants "$TENANTS" --submitters "$SUBMITTERS" --workers "$WORKERS" \
      --max-jobs "$MAX_JOBS" --ack-mode "$ACK_MODE" >"$file.json" 2>"$file.err" || rc=$?; } 2>"$file.time"
  b1="$(busy_ticks)" t1="$(now_s)"
  for u in "${urls[@]}"; do hand="$hand${hand:+/}$(handouts "$u" || echo '?')"; done
  for i in "${pids[@]}"; do
    kill -0 "$i" 2>/dev/null || { echo "   !! $config: sluiced $i died during the run" >&2; rc=1; }
    stop_pid "$i" 20
    forget_pid "$i"
  done
  if ! jq -e . "$file.json" >/dev/null 2>&1; then
    echo "   !! $config: no JSON from sluice-bench-e2e (exit $rc); stderr:" >&2
    tail -n 10 "$file.err" >&2
    BAD=1
    printf '%s\t%s\t-\t-\t-\t-\t-\t-\t-\t-\tNO\t-\t-\t-\n' "$round" "$config" >>"$RESULTS"
    return 0
  fi
  ok=yes
  [ "$rc" = 0 ] || { ok="NO"; BAD=1; }
  local n
  n="$(jq -r .completed "$file.json")"
  if [ "$config" != sqlite ]; then
    w1="$(wal_syncs)" x1="$(xacts "$PG_DB")"
    xj="$(awk -v x="$((x1 - x0))" -v n="$n" 'BEGIN {printf "%.2f", x / n}')"
    wj="$(awk -v w="$((w1 - w0))" -v n="$n" 'BEGIN {printf "%.3f", w / n}')"
  fi
  client_us="$(awk '{printf "%.0f", ($1 + $2) * 1e6 / '"$n"'}' "$file.time")"
  other="$(jq -r --argjson b "$((b1 - b0))" --argjson hz "$HZ" --arg t0 "$t0" --arg t1 "$t1" \
    --argjson c "$(awk '{print $1 + $2}' "$file.time")" \
    '(($b / $hz) - (.sluiced_cpu_s // 0) - (.postgres_cpu_s // 0) - $c) / (($t1 | tonumber) - ($t0 | tonumber)) | . * 100 | round / 100' \
    "$file.json")"
  jq -r --arg c "$config" --arg ok "$ok" --arg h "$hand" --arg cl "$client_us" --arg o "$other" \
    '"   \($c | . + "      " | .[0:7]) \(.e2e_jobs_per_s) jobs/s (submit \(.submit_jobs_per_s) 202/s; p50 \(.latency_ms.p50) p99 \(.latency_ms.p99) ms); CPU us/job sluiced \(.sluiced_cpu_us_per_job), postgres \(.postgres_cpu_us_per_job // "-"), client \($cl); other load \($o) cores; handouts \($h); exactly once: \($ok)" +
     (if .check.ok then "" else "\n   !! check: \(.check | del(.server_totals, .server_stats) | tostring)" end)' "$file.json"
  jq -r --arg r "$round" --arg c "$config" --arg ok "$ok" --arg h "$hand" --arg cl "$client_us" \
    --arg o "$other" --arg x "$xj" --arg w "$wj" \
    '[$r, $c, .e2e_jobs_per_s, .submit_jobs_per_s, .latency_ms.p50, .latency_ms.p99,
      .sluiced_cpu_us_per_job, (.postgres_cpu_us_per_job // "-"), $cl, $o, $ok, $h, $x, $w]
     | map(tostring) | join("\t")' "$file.json" >>"$RESULTS"
  [ "$KEEP_DATA" = 1 ] || rm -rf "$dir"
}

# run_pgboss <round> <raw-output prefix>
run_pgboss() {
  local round="$1" file="$2" rc=0 p0 p1 b0 b1 t0 t1 w0 w1 x0 x1 ok=yes n c distinct
  new_database
  w0="$(wal_syncs)" x0="$(xacts "$PG_DB")" p0="$(pg_ticks)" b0="$(busy_ticks)" t0="$(now_s)"
  { TIMEFORMAT='%U %S'; time (NODE_PATH="$PGBOSS_DIR/node_modules" \
      timeout -k 5 600 node "$PGBOSS_JS" --mode single --phase concurrent --n "$JOBS" \
      --tenants "$TENANTS" --wconc "$PGBOSS_WCONC" --batch "$PGBOSS_BATCH" \
      --inflight "$PGBOSS_INFLIGHT" --url "$PG_URI" >"$file.json" 2>"$file.err") || rc=$?; } 2>"$file.time"
  p1="$(pg_ticks)" b1="$(busy_ticks)" t1="$(now_s)"
  if ! jq -e . "$file.json" >/dev/null 2>&1; then
    echo "   !! pgboss: no JSON (exit $rc); stderr:" >&2
    tail -n 10 "$file.err" >&2
    BAD=1
    printf '%s\tpgboss\t-\t-\t-\t-\t-\t-\t-\t-\tNO\t-\t-\t-\n' "$round" >>"$RESULTS"
    return 0
  fi
  # The check: JOBS jobs completed, each of the JOBS payloads once.
  read -r c distinct < <(psql_do "$PG_DB" "SELECT count(*), count(DISTINCT data->>'i') FROM pgboss.job
                                           WHERE name LIKE 'bench-tenant-%' AND state = 'completed'" | tr '|' ' ')
  { [ "$rc" = 0 ] && [ "$c" = "$JOBS" ] && [ "$distinct" = "$JOBS" ]; } || { ok="NO ($c completed, $distinct distinct, exit $rc)"; BAD=1; }
  w1="$(wal_syncs)" x1="$(xacts "$PG_DB")"
  n="$JOBS"
  jq -r --arg r "$round" --arg ok "$ok" --argjson n "$n" --argjson pg "$((p1 - p0))" --argjson hz "$HZ" \
    --argjson b "$((b1 - b0))" --arg t0 "$t0" --arg t1 "$t1" --argjson cl "$(awk '{print $1 + $2}' "$file.time")" \
    --arg x "$(awk -v x="$((x1 - x0))" -v n="$n" 'BEGIN {printf "%.2f", x / n}')" \
    --arg w "$(awk -v w="$((w1 - w0))" -v n="$n" 'BEGIN {printf "%.3f", w / n}')" '
    ($pg / $hz) as $pgs |
    (($b / $hz - $pgs - $cl) / (($t1 | tonumber) - ($t0 | tonumber)) | . * 100 | round / 100) as $other |
    [$r, "pgboss", .completed_jobs_per_s, .enqueue_jobs_per_s, .enqueue_to_handler_ms.p50,
     .enqueue_to_handler_ms.p99, "-", ($pgs * 1e6 / $n | round), ($cl * 1e6 / $n | round), $other, $ok, "-", $x, $w]
    | map(tostring) | join("\t")' "$file.json" >>"$RESULTS"
  tail -n 1 "$RESULTS" | awk -F'\t' '{printf "   pgboss  %s jobs/s (send %s/s; send -> handler p50 %s p99 %s ms); CPU us/job postgres %s, client %s; other load %s cores; exactly once: %s\n", $3, $4, $5, $6, $8, $9, $10, $11}'
}

# ---- rounds ----------------------------------------------------------------------------------
CONFIGS=(sqlite)
for k in $INSTANCES; do CONFIGS+=("pg$k"); done
CONFIGS+=(pgboss)
echo "==> a private PostgreSQL 15 cluster (fsync on, synchronous_commit on, max_connections $MAX_CONN)"
start_postgres "$ROOT/$OUT" -c max_connections="$MAX_CONN"
echo "   on 127.0.0.1:$PGPORT, data in ${PGDIR#"$ROOT/"}, postmaster pid $PM_PID"
echo "==> $ROUNDS round(s) of ${CONFIGS[*]}: $JOBS jobs, $TENANTS tenants; sluice: $SUBMITTERS submitters, $WORKERS workers (max_jobs $MAX_JOBS, acks: $ACK_MODE), --db-pool $DB_POOL; pg-boss: $PGBOSS_INFLIGHT concurrent sends, $PGBOSS_WCONC pollers x batch $PGBOSS_BATCH per queue; raw outputs: $PREFIX-*"
LOADS=()
for ((r = 1; r <= ROUNDS; r++)); do
  LOADS+=("$(cut -d" " -f1-3 /proc/loadavg)")
  echo "-- round $r/$ROUNDS (load average ${LOADS[-1]})"
  order=("${CONFIGS[@]}")
  if [ $((r % 2)) = 0 ]; then
    order=()
    for ((i = ${#CONFIGS[@]} - 1; i >= 0; i--)); do order+=("${CONFIGS[$i]}"); done
  fi
  for c in "${order[@]}"; do
    if [ "$c" = pgboss ]; then
      run_pgboss "$r" "$PREFIX-r$r-pgboss"
    else
      run_sluice "$r" "$c" "$PREFIX-r$r-$c"
    fi
  done
done

# ---- summary -------------------------------------------------------------------------------
summary() {
  echo
  echo "cluster benchmark $STAMP, $REV: $(nproc) cores, load average at each round's start: $(IFS=';'; echo "${LOADS[*]}"), at the end $(cut -d" " -f1-3 /proc/loadavg)"
  echo "$JOBS jobs, $TENANTS tenants, single submits while workers run; sluice: $SUBMITTERS submitting threads, $WORKERS workers (lease max_jobs $MAX_JOBS, acks: $ACK_MODE), --db-pool $DB_POOL per instance; pg-boss $PGBOSS_VERSION: $PGBOSS_INFLIGHT concurrent sends, $PGBOSS_WCONC pollers x batch $PGBOSS_BATCH per queue"
  echo "PostgreSQL 15 private cluster, default settings (fsync, synchronous_commit on), max_connections $MAX_CONN; SQLite --synchronous FULL"
  echo
  echo "| | completed jobs/s: rounds | median | × pg-boss (median of rounds) | submit/s | latency p50 / p99 ms | CPU µs/job: sluiced / postgres / client | other load, cores | PG xacts / WAL flushes per job | handouts per instance (last round) | exactly once |"
  echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
  awk -F'\t' -v rounds="$ROUNDS" -v configs="${CONFIGS[*]}" '
    function med(list,   n, a, i, j, t) {
      n = split(list, a, " ")
      if (n == 0) return "-"
      for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
      return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
    }
    function m(c, col, dec,   r, l, x) {
      l = ""
      for (r = 1; r <= rounds; r++) { x = v[r, c, col]; if (x != "-" && x != "") l = l " " x }
      x = med(l)
      return x == "-" ? "-" : sprintf("%." dec "f", x)
    }
    NR > 1 { for (k = 3; k <= NF; k++) v[$1, $2, k] = $k }
    END {
      nc = split(configs, cs, " ")
      for (i = 1; i <= nc; i++) {
        c = cs[i]; cells = ""; ratios = ""; okall = "yes"
        for (r = 1; r <= rounds; r++) {
          cells = cells (r > 1 ? " / " : "") v[r, c, 3]
          if (v[r, c, 3] != "-" && v[r, "pgboss", 3] + 0 > 0) ratios = ratios " " v[r, c, 3] / v[r, "pgboss", 3]
          if (v[r, c, 11] != "yes") okall = "NO (round " r ")"
        }
        name = (c == "sqlite") ? "sluice, SQLite, 1 instance" : (c == "pgboss") ? "pg-boss (latency: send -> handler)" : "sluice, PostgreSQL, " substr(c, 3) " instance" (substr(c, 3) > 1 ? "s" : "")
        printf "| %s | %s | %s | %s | %s | %s / %s | %s / %s / %s | %s | %s / %s | %s | %s |\n", name, cells, m(c, 3, 0),
          (ratios == "" ? "-" : sprintf("%.2f", med(ratios))), m(c, 4, 0), m(c, 5, 0), m(c, 6, 0),
          m(c, 7, 0), m(c, 8, 0), m(c, 9, 0), m(c, 10, 2), m(c, 13, 2), m(c, 14, 3), v[rounds, c, 12], okall
      }
    }' "$RESULTS"
  echo
  echo "(postgres CPU is the whole private cluster's; client is sluice-bench-e2e or pg-boss's two node processes; other load: the rest of the machine during the run)"
  if [ "$BAD" = 1 ]; then
    echo "WARNING: a run failed its check or did not finish (see above and $PREFIX-r*)"
  else
    echo "every run: every accepted job completed exactly once"
  fi
}
summary | tee "$PREFIX-summary.txt"

# ---- profile: one 3-instance run ------------------------------------------------------------
if [ "$PROFILE" = 1 ]; then
  P="$PREFIX-profile"
  echo
  echo "==> profile: a fresh cluster with pg_stat_statements, 3 instances, one run of $JOBS jobs; perf record -a -g -F 499 for ${PROFILE_S}s from 2 s in"
  stop_postgres keep; save_pg_log; [ "$KEEP_DATA" = 1 ] || rm -rf "$PGDIR"
  PGDIR="" PGPORT=""
  start_postgres "$ROOT/$OUT" -c max_connections="$MAX_CONN" -c shared_preload_libraries=pg_stat_statements
  new_database
  psql_do "$PG_DB" "CREATE EXTENSION pg_stat_statements" >/dev/null
  dir="$(mktemp -d "$ROOT/$OUT/cluster-data.XXXXXX")"
  DATA_DIRS+=("$dir")
  pids=() e2e_args=()
  for i in 1 2 3; do
    start_sluiced "$PG_URI" "$dir/sluiced-$i" --db-pool "$DB_POOL"
    pids+=("$S_PID")
    e2e_args+=(--server "$S_URL" --sluiced-pid "$S_PID")
  done
  psql_do "$PG_DB" "SELECT pg_stat_statements_reset()" >/dev/null
  x0="$(xacts "$PG_DB")" w0="$(wal_syncs)"
  SLUICE_ADMIN_TOKEN="$ADMIN" timeout -k 5 900 "$E2E" "${e2e_args[@]}" --pg-pid "$PM_PID" \
    --jobs "$JOBS" --tenants "$TENANTS" --submitters "$SUBMITTERS" --workers "$WORKERS" \
    --max-jobs "$MAX_JOBS" >"$P-e2e.json" 2>"$P-e2e.err" &
  e2e_pid=$!
  PIDS+=("$e2e_pid")
  q="SELECT state || ' ' || coalesce(wait_event_type || ':' || wait_event, 'CPU')
     FROM pg_stat_activity WHERE datname = '$PG_DB' AND backend_type = 'client backend'
     AND pid <> pg_backend_pid()"
  (while kill -0 "$e2e_pid" 2>/dev/null; do psql_do postgres "$q" 2>/dev/null || true; sleep 0.1; done) >"$P-waits.samples" &
  waits_pid=$!
  PIDS+=("$waits_pid")
  sleep 2
  # The whole machine: sluiced, postgres, the load generator and whatever else runs here
  # (split by process name below; the profiles of sluiced and postgres are filtered).
  perf record -q -a -g -F 499 -o "$P.perf" -- sleep "$PROFILE_S" >"$P-perf.err" 2>&1 || true
  rc=0
  wait "$e2e_pid" || rc=$?
  forget_pid "$e2e_pid"
  wait "$waits_pid" 2>/dev/null || true
  forget_pid "$waits_pid"
  for i in "${pids[@]}"; do stop_pid "$i" 20; forget_pid "$i"; done
  n="$(jq -r '.completed // 0' "$P-e2e.json" 2>/dev/null || echo 0)"
  [ "$n" -gt 0 ] || { echo "profile run failed (exit $rc):"; tail -n 5 "$P-e2e.err"; exit 1; }
  x1="$(xacts "$PG_DB")" w1="$(wal_syncs)"
  {
    echo "profile run (3 instances, pg_stat_statements on, perf attached ${PROFILE_S}s): $(jq -c '{e2e_jobs_per_s, submit_jobs_per_s, latency_ms, sluiced_cpu_us_per_job, postgres_cpu_us_per_job, jobs_per_lease, empty_leases, leases, ok: .check.ok}' "$P-e2e.json")"
    echo "transactions per job: $(awk -v x="$((x1 - x0))" -v n="$n" 'BEGIN {printf "%.2f", x / n}'); WAL flushes per job: $(awk -v w="$((w1 - w0))" -v n="$n" 'BEGIN {printf "%.3f", w / n}')"
    echo "statements per job (pg_stat_statements, all statements): $(psql_do "$PG_DB" "SELECT round(sum(calls)::numeric / $n, 2) FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())"), their execution time per job: $(psql_do "$PG_DB" "SELECT round(sum(total_exec_time)::numeric * 1000 / $n, 0) FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())") us"
    echo
    echo "== statements: calls per job, mean us, total ms, statement"
    psql_do "$PG_DB" "SELECT round(calls::numeric / $n, 3), round(mean_exec_time::numeric * 1000, 0), round(total_exec_time::numeric, 0),
                             left(regexp_replace(query, '\s+', ' ', 'g'), 120)
                      FROM pg_stat_statements
                      WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
                      ORDER BY calls DESC LIMIT 30"
    echo
    echo "== backend states while the run lasted (pg_stat_activity every 0.1 s)"
    sort "$P-waits.samples" | uniq -c | sort -rn | awk 'NR <= 15' |
      awk -v t="$(wc -l <"$P-waits.samples")" '{c = $1; $1 = ""; printf "%5.1f%% %s\n", c * 100 / t, $0}'
    echo
    top() { awk -v n="$1" '!/^#/ && NF > 0 && c < n {sub(/[ -]+$/, ""); print; c++}'; }
    by_dso() {  # the share of each shared object (the kernel included) in one process name's samples
      perf report -i "$P.perf" --stdio --no-children --comms "$1" --percentage relative --sort dso,sym -g none 2>/dev/null |
        awk '!/^#/ && NF > 0 {p = $1; sub(/%/, "", p); s[$2] += p} END {for (d in s) printf "%7.2f%%  %s\n", s[d], d}' | sort -rn | awk 'NR <= 6'
    }
    symbols() {  # the top symbols of one process name, self time, % of its samples
      perf report -i "$P.perf" --stdio --no-children --comms "$1" --percentage relative --sort dso,sym -g none 2>/dev/null | top 25
    }
    echo "== perf, whole machine for ${PROFILE_S}s: samples by process name (the CPU split)"
    perf report -i "$P.perf" --stdio --no-children --sort comm -g none 2>/dev/null | top 12
    echo "== sluiced (all instances): share of its samples by shared object"
    by_dso sluiced
    echo "== sluiced: top symbols, self time"
    symbols sluiced
    echo "== postgres (every process of the cluster): share of its samples by shared object"
    by_dso postgres
    echo "== postgres: top symbols, self time"
    symbols postgres
  } >"$P.txt" 2>&1
  rm -f "$P-waits.samples"
  cat "$P.txt"
  echo "(profile data: $P.perf; perf report -i $P.perf --comms sluiced|postgres)"
fi
[ "$BAD" = 0 ]
