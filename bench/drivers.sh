#!/usr/bin/env bash
# sluice on SQLite beside sluice on PostgreSQL, in one run on this machine: durable
# intake and end-to-end throughput (submit, lease, complete) on each storage driver.
#
# Usage: bench/drivers.sh [rounds]            (default 3; about a minute and a half per round)
#   env: BUILD_DIR (build), DURATION (10s), CONNS (16), WRK_THREADS (2): the intake run;
#        JOBS (20000), TENANTS (10), SUBMITTERS (8), WORKERS (8), MAX_JOBS (8): the
#        end-to-end run (bench/e2e.cc); DB_POOL (8): sluiced --db-pool on PostgreSQL;
#        PGBIN (/usr/lib/postgresql/15/bin); KEEP_DATA=1 keeps each run's data dir;
#        STATEMENTS=1 loads pg_stat_statements into the cluster (not a default setting:
#        for a diagnosis, not for figures) and prints the statements per end-to-end job.
#
# A private PostgreSQL 15 cluster runs for the whole run: initdb into a fresh directory
# under var/bench/ (on the same disk as the SQLite files), owned by the postgres user
# when run as root, started on a free loopback port with its own socket directory and
# otherwise default settings (fsync on, synchronous_commit on, full_page_writes on);
# it is stopped and removed at exit. sluiced runs with its defaults (--synchronous FULL
# on SQLite; --db-pool DB_POOL connections on PostgreSQL).
#
# Each round, drivers in alternating order (odd rounds: SQLite first; even: PostgreSQL):
#   (a) intake: a fresh sluiced on a fresh SQLite file / a fresh PostgreSQL database
#       (CREATE DATABASE), queue "intake" and a submit token as in bench/intake.sh,
#       then wrk -t2 -c16 -d10s POST /v1/queues/intake/jobs (bench/intake.lua): 202/s;
#       the jobs in the database are counted afterwards and must be >= the 202s;
#   (b) end-to-end: sluice-bench-e2e on a fresh file / database: JOBS jobs from
#       SUBMITTERS threads, WORKERS long-polling workers completing each job; submit
#       202/s, completed jobs/s, submit -> complete latency, every job completed once.
# CPU per job: sluiced's utime + stime from /proc over the measured span; on PostgreSQL
# also the cluster's (the postmaster, its live children and the children it reaped: the
# backends serving sluiced, the WAL writer, the checkpointer...). From the database's
# own statistics: transactions per job (pg_stat_database) and WAL flushes per job
# (pg_stat_wal.wal_sync). Ratios are PostgreSQL / SQLite per round (the same moment's
# noise on both sides), then their median. Raw outputs: var/bench/drivers-<stamp>-*.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$(pwd)"
# install_missing, bench_outputs, tree_rev, build_targets, kill_pids, remove_data_dirs;
# stop_pid, forget_pid, cpu_ticks, ticks_us_per_job; the private PostgreSQL cluster:
# require_pg_tools, start_postgres, stop_postgres, new_database, psql_do, pg_ticks,
# wal_syncs, xacts
source "$ROOT/bench/lib.sh"
ROUNDS="${1:-${ROUNDS:-3}}"
BUILD_DIR="${BUILD_DIR:-build}"
DURATION="${DURATION:-10s}"
CONNS="${CONNS:-16}"
WRK_THREADS="${WRK_THREADS:-2}"
JOBS="${JOBS:-20000}"
TENANTS="${TENANTS:-10}"
SUBMITTERS="${SUBMITTERS:-8}"
WORKERS="${WORKERS:-8}"
MAX_JOBS="${MAX_JOBS:-8}"
DB_POOL="${DB_POOL:-8}"
PGBIN="${PGBIN:-/usr/lib/postgresql/15/bin}"
KEEP_DATA="${KEEP_DATA:-0}"
STATEMENTS="${STATEMENTS:-0}"
[[ "$ROUNDS" =~ ^[1-9][0-9]*$ ]] || { echo "rounds must be a positive integer" >&2; exit 2; }

# ---- tools and build -----------------------------------------------------------------
install_missing wrk sqlite3 curl jq

bench_outputs drivers
REV="$(tree_rev . ':!bench' ':!docs' ':!README.md')"

echo "==> building sluiced and sluice-bench-e2e in $BUILD_DIR (working tree of $REV)"
build_targets scripts/setup.sh "$BUILD_DIR" sluiced sluice-bench-e2e
SLUICED="$ROOT/$BUILD_DIR/server/sluiced"
E2E="$ROOT/$BUILD_DIR/bench/sluice-bench-e2e"
LUA="$ROOT/bench/intake.lua"
DUR_S="${DURATION%s}"
WRK_LIMIT=$((DUR_S + 30))  # hard bound on one wrk run
require_pg_tools

# ---- process handling ------------------------------------------------------------------
PIDS=()
DATA_DIRS=()
cleanup() {
  kill_pids
  if [ -n "$PGDIR" ]; then
    stop_postgres keep
    # The server's log goes with the raw outputs; the cluster itself goes.
    cp "$PGDIR/server.log" "$PREFIX-postgres.log" 2>/dev/null || true
    [ "$KEEP_DATA" = 1 ] || rm -rf "$PGDIR"
  fi
  remove_data_dirs
}
trap cleanup EXIT
trap 'exit 130' INT TERM

HZ="$(getconf CLK_TCK)"
start_drivers_postgres() {
  local opts=()
  [ "$STATEMENTS" = 1 ] && opts=(-c shared_preload_libraries=pg_stat_statements)
  start_postgres "$ROOT/$OUT" "${opts[@]}"
}

DB_EXTENSIONS=()  # created in each new database
[ "$STATEMENTS" = 1 ] && DB_EXTENSIONS=(pg_stat_statements)

# Diagnosis mode: what the database's client backends are doing, sampled every 0.1 s
# while a run lasts ("active IO:WALSync", "active Lock:advisory", "idle in transaction
# Client:ClientRead" = waiting for sluiced's next statement...), counted at the end.
WAITS_PID=""
start_waits() {  # start_waits <database> <file>
  [ "$STATEMENTS" = 1 ] || return 0
  local q="SELECT state || ' ' || coalesce(wait_event_type || ':' || wait_event, 'CPU')
           FROM pg_stat_activity WHERE datname = '$1' AND backend_type = 'client backend'
           AND pid <> pg_backend_pid()"
  (while :; do psql_do postgres "$q" 2>/dev/null || true; sleep 0.1; done) >"$2.samples" &
  WAITS_PID=$!
}
stop_waits() {  # stop_waits <file>
  [ -n "$WAITS_PID" ] || return 0
  kill "$WAITS_PID" 2>/dev/null || true
  wait "$WAITS_PID" 2>/dev/null || true
  WAITS_PID=""
  sort "$1.samples" | uniq -c | sort -rn |
    awk '{n[NR] = $0; t += $1} END {for (i = 1; i <= NR; i++) {split(n[i], f, " "); printf "%5.1f%%  %s\n", f[1] * 100 / t, substr(n[i], index(n[i], f[2]))}}' >"$1"
  rm -f "$1.samples"
}

# ---- (a) intake --------------------------------------------------------------------------
# Sets I_RPS, I_OK, I_BAD, I_CODES, I_SOCK, I_DB, I_CPU_US, I_PG_US, I_XACT, I_WALSYNC.
run_intake() {  # run_intake <sqlite|postgres> <raw-output-file>
  local driver="$1" file="$2" dir db pid url admin token code port="" t0 t1 p0=0 p1=0 w0=0 w1=0 rc=0
  local args=()
  dir="$(mktemp -d "$ROOT/$OUT/drivers-data.XXXXXX")"
  DATA_DIRS+=("$dir")
  if [ "$driver" = sqlite ]; then
    db="$dir/sluice.db"
    args=(--db "$db")
  else
    new_database "${DB_EXTENSIONS[@]}"
    db="$PG_URI"
    args=(--db "$db" --db-pool "$DB_POOL")
  fi
  admin="bench-admin-$RANDOM$RANDOM$RANDOM"
  SLUICE_ADMIN_TOKEN="$admin" "$SLUICED" --listen 127.0.0.1:0 "${args[@]}" \
    --port-file "$dir/port" >"$dir/sluiced.log" 2>&1 &
  pid=$!
  PIDS+=("$pid")
  for _ in $(seq 200); do
    [ -s "$dir/port" ] && port="$(cat "$dir/port")" && [ -n "$port" ] && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  [ -n "$port" ] || { echo "sluiced did not start:" >&2; cat "$dir/sluiced.log" >&2; return 1; }
  url="http://127.0.0.1:$port"
  for _ in $(seq 200); do
    curl -fsS --max-time 1 "$url/healthz" >/dev/null 2>&1 && break
    sleep 0.1
  done
  curl -fsS --max-time 2 "$url/healthz" >/dev/null || { echo "sluiced not healthy" >&2; return 1; }
  code="$(curl -sS --max-time 5 -o "$dir/queue.json" -w '%{http_code}' -X PUT \
    -H "Authorization: Bearer $admin" -H 'Content-Type: application/json' \
    -d '{"rate":1000000,"capacity":100000000}' "$url/v1/admin/queues/intake")"
  [[ "$code" == 2?? ]] || { echo "PUT queue: HTTP $code $(cat "$dir/queue.json")" >&2; return 1; }
  token="$(curl -fsS --max-time 5 -X POST \
    -H "Authorization: Bearer $admin" -H 'Content-Type: application/json' \
    -d '{"scopes":["submit"],"tenant":"bench"}' "$url/v1/admin/tokens" | jq -er .token)" ||
    { echo "cannot create the submit token" >&2; return 1; }

  if [ "$driver" = postgres ]; then
    w0="$(wal_syncs)" p0="$(pg_ticks)"
    start_waits "$PG_DB" "$file.waits"
  fi
  t0="$(cpu_ticks "$pid")"
  SLUICE_BENCH_TOKEN="$token" timeout -k 5 "$WRK_LIMIT" wrk -t"$WRK_THREADS" -c"$CONNS" -d"$DURATION" \
    --latency -s "$LUA" "$url/v1/queues/intake/jobs" >"$file.body" 2>&1 || rc=$?
  t1="$(cpu_ticks "$pid")"
  if [ "$driver" = postgres ]; then
    p1="$(pg_ticks)"
    stop_waits "$file.waits"
  fi
  [ "$rc" = 0 ] || { echo "wrk failed (see $file.body):" >&2; tail -n 5 "$file.body" >&2; return 1; }
  # Counted while the server runs: every 202'd job must already be committed.
  if [ "$driver" = sqlite ]; then
    I_DB="$(sqlite3 "$db" 'SELECT count(*) FROM jobs')"
  else
    I_DB="$(psql_do "$PG_DB" 'SELECT count(*) FROM jobs')"
  fi
  alive_note=""
  kill -0 "$pid" 2>/dev/null || alive_note="sluiced died during the run"
  stop_pid "$pid" 20
  forget_pid "$pid"
  I_XACT="-" I_WALSYNC="-"
  {
    echo "== sluiced ($driver) on $url: wrk -t$WRK_THREADS -c$CONNS -d$DURATION POST /v1/queues/intake/jobs"
    cat "$file.body"
    echo "server-cpu-ticks: $((t1 - t0)) (CLK_TCK $HZ)"
    echo "jobs-in-db: $I_DB"
    [ -n "$alive_note" ] && echo "!! $alive_note"
  } >"$file"
  rm -f "$file.body"
  I_OK="$(awk '/^intake-202:/ {print $2}' "$file")"
  I_BAD="$(awk '/^intake-non202:/ {print $2}' "$file")"
  I_CODES="$(awk '/^intake-non202-statuses:/ {print $2}' "$file")"
  I_RPS="$(awk '/^intake-202-per-s:/ {print $2}' "$file")"
  I_SOCK="$(awk '/^intake-socket-errors:/ {print $2, $3, $4, $5}' "$file")"
  [ -n "$I_OK" ] && [ -n "$I_RPS" ] || { echo "no intake counts in $file" >&2; return 1; }
  I_CPU_US="$(ticks_us_per_job $((t1 - t0)) "$I_OK")"
  I_PG_US="-"
  if [ "$driver" = postgres ]; then
    w1="$(wal_syncs)"
    I_PG_US="$(ticks_us_per_job $((p1 - p0)) "$I_OK")"
    I_XACT="$(awk -v x="$(xacts "$PG_DB")" -v n="$I_DB" 'BEGIN {printf "%.2f", x / n}')"
    I_WALSYNC="$(awk -v w="$((w1 - w0))" -v n="$I_OK" 'BEGIN {printf "%.3f", w / n}')"
    {
      echo "postgres-cpu-ticks: $((p1 - p0))"
      echo "postgres-transactions-per-job: $I_XACT (whole life of the database, setup included)"
      echo "postgres-wal-syncs: $((w1 - w0)) ($I_WALSYNC per 202)"
    } >>"$file"
  fi
  echo "== sluiced log (tail)" >>"$file"
  tail -n 5 "$dir/sluiced.log" >>"$file"
  if [ -n "$alive_note" ]; then
    DIED=1
    echo "   !! $driver intake: $alive_note; its log: $dir/sluiced.log" >&2
    DATA_DIRS=("${DATA_DIRS[@]/$dir}")
  elif [ "$KEEP_DATA" != 1 ]; then
    rm -rf "$dir"
  fi
}

# ---- (b) end to end ------------------------------------------------------------------------
# Sets E_JSON (the file with the benchmark's JSON), E_OK, E_XACT, E_WALSYNC.
run_e2e() {  # run_e2e <sqlite|postgres> <raw-output-file>
  local driver="$1" file="$2" dir rc=0 w0=0 w1=0
  local args=(--jobs "$JOBS" --tenants "$TENANTS" --submitters "$SUBMITTERS" --workers "$WORKERS"
              --max-jobs "$MAX_JOBS")
  dir="$(mktemp -d "$ROOT/$OUT/drivers-data.XXXXXX")"
  DATA_DIRS+=("$dir")
  if [ "$driver" = sqlite ]; then
    args+=(--db "$dir/sluice.db")
  else
    new_database "${DB_EXTENSIONS[@]}"
    args+=(--db "$PG_URI" --pg-pid "$PM_PID" "--server-arg=--db-pool" "--server-arg=$DB_POOL")
    w0="$(wal_syncs)"
    start_waits "$PG_DB" "$file.waits"
  fi
  timeout -k 5 900 "$E2E" "${args[@]}" >"$file" 2>"$file.err" || rc=$?
  stop_waits "$file.waits"
  E_JSON="$file"
  E_OK="$([ "$rc" = 0 ] && echo yes || echo "NO (exit $rc)")"
  E_XACT="-" E_WALSYNC="-"
  if ! jq -e . "$file" >/dev/null 2>&1; then
    echo "   !! $driver e2e: no JSON (exit $rc); stderr:" >&2
    tail -n 10 "$file.err" >&2
    return 1
  fi
  if [ "$driver" = postgres ]; then
    w1="$(wal_syncs)"
    local n
    n="$(jq -r .completed "$file")"
    E_XACT="$(awk -v x="$(xacts "$PG_DB")" -v n="$n" 'BEGIN {if (n > 0) printf "%.2f", x / n; else print "-"}')"
    E_WALSYNC="$(awk -v w="$((w1 - w0))" -v n="$n" 'BEGIN {if (n > 0) printf "%.3f", w / n; else print "-"}')"
    if [ "$STATEMENTS" = 1 ]; then
      {
        echo "== pg_stat_statements, per completed job ($n jobs): calls, total ms, statement"
        psql_do "$PG_DB" "SELECT round(calls::numeric / $n, 3), round(total_exec_time::numeric, 1),
                                 left(regexp_replace(query, '\s+', ' ', 'g'), 110)
                          FROM pg_stat_statements
                          WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
                          ORDER BY calls DESC LIMIT 25"
      } >"$file.statements"
    fi
  fi
  [ "$KEEP_DATA" = 1 ] || rm -rf "$dir"
}

# ---- rounds ----------------------------------------------------------------------------------
echo "==> a private PostgreSQL 15 cluster (fsync on, synchronous_commit on)"
start_drivers_postgres
echo "   on 127.0.0.1:$PGPORT, data in ${PGDIR#"$ROOT/"}, postmaster pid $PM_PID$([ "$STATEMENTS" = 1 ] && echo ", with pg_stat_statements")"
RESULTS="$PREFIX-rounds.tsv"
printf 'round\tdriver\tintake_rps\tintake_202\tintake_non202\tintake_db\tintake_sluiced_us\tintake_pg_us\tintake_xacts_per_job\tintake_wal_syncs_per_job\te2e_submit_rps\te2e_rps\te2e_p50_ms\te2e_p99_ms\te2e_sluiced_us\te2e_pg_us\te2e_ok\te2e_xacts_per_job\te2e_wal_syncs_per_job\n' >"$RESULTS"
NON202=0 LOST=0 E2E_BAD=0 DIED=0
echo "==> $ROUNDS round(s): intake wrk -t$WRK_THREADS -c$CONNS -d$DURATION; end to end $JOBS jobs, $TENANTS tenants, $SUBMITTERS submitters, $WORKERS workers (max_jobs $MAX_JOBS); raw outputs: $PREFIX-*"
for ((r = 1; r <= ROUNDS; r++)); do
  echo "-- round $r/$ROUNDS (load average $(cut -d" " -f1-3 /proc/loadavg))"
  order=(sqlite postgres); [ $((r % 2)) = 0 ] && order=(postgres sqlite)
  declare -A row=()
  for d in "${order[@]}"; do
    run_intake "$d" "$PREFIX-r$r-$d-intake.txt"
    printf '   %-9s intake %9s 202/s (202s %s, non-202 %s%s; in db %s; socket errors %s); CPU us/job sluiced %s, postgres %s\n' \
      "$d" "$I_RPS" "$I_OK" "$I_BAD" "$([ "$I_BAD" != 0 ] && echo " [$I_CODES]")" "$I_DB" "$I_SOCK" "$I_CPU_US" "$I_PG_US"
    [ "$I_BAD" != 0 ] && NON202=1
    if [ "$I_DB" -lt "$I_OK" ]; then
      LOST=1
      echo "   !! $d intake: $I_OK jobs acknowledged but only $I_DB in the database: LOST"
    elif [ $((I_DB - I_OK)) -gt "$CONNS" ]; then
      LOST=1
      echo "   !! $d intake: $I_DB jobs in the database for $I_OK 202s: more than $CONNS cut off in flight"
    fi
    row[$d.intake]="$I_RPS	$I_OK	$I_BAD	$I_DB	$I_CPU_US	$I_PG_US	$I_XACT	$I_WALSYNC"
  done
  for d in "${order[@]}"; do
    run_e2e "$d" "$PREFIX-r$r-$d-e2e.json" || { E2E_BAD=1; row[$d.e2e]="-	-	-	-	-	-	NO	-	-"; continue; }
    [ "$E_OK" = yes ] || E2E_BAD=1
    jq -r --arg d "$d" --arg ok "$E_OK" '"   \($d | . + "         " | .[0:9]) e2e    \(.e2e_jobs_per_s) jobs/s (submit \(.submit_jobs_per_s) 202/s; latency p50 \(.latency_ms.p50) p99 \(.latency_ms.p99) ms; \(.jobs_per_lease) jobs per lease); CPU us/job sluiced \(.sluiced_cpu_us_per_job), postgres \(.postgres_cpu_us_per_job // "-"); every job once: \($ok)" +
      (if .check.ok then "" else "\n   !! check: \(.check | del(.server_totals, .server_stats) | tostring)" end)' "$E_JSON"
    row[$d.e2e]="$(jq -r --arg ok "$E_OK" --arg x "$E_XACT" --arg w "$E_WALSYNC" '[.submit_jobs_per_s, .e2e_jobs_per_s, .latency_ms.p50, .latency_ms.p99, .sluiced_cpu_us_per_job, (.postgres_cpu_us_per_job // "-"), $ok, $x, $w] | map(tostring) | join("\t")' "$E_JSON")"
  done
  for d in sqlite postgres; do
    printf '%s\t%s\t%s\t%s\n' "$r" "$d" "${row[$d.intake]}" "${row[$d.e2e]}" >>"$RESULTS"
  done
  unset row
done

# ---- summary -------------------------------------------------------------------------------
{
  echo
  echo "drivers benchmark $STAMP, $REV: $(nproc) cores, load average at the end $(cut -d" " -f1-3 /proc/loadavg)"
  echo "intake: wrk -t$WRK_THREADS -c$CONNS -d$DURATION keep-alive POSTs, only 202s count; end to end: $JOBS jobs, $TENANTS tenants, $SUBMITTERS submitters, $WORKERS workers (lease max_jobs $MAX_JOBS, one complete after another)"
  echo "PostgreSQL 15 on the same disk, default settings (fsync, synchronous_commit on), sluiced --db-pool $DB_POOL; SQLite --synchronous FULL"
  echo
  echo "| | SQLite: per round | median | PostgreSQL: per round | median | PG / SQLite (median of rounds) |"
  echo "| --- | --- | --- | --- | --- | --- |"
  awk -F'\t' -v rounds="$ROUNDS" '
    function med(list,   n, a, i, j, t) {
      n = split(list, a, " ")
      if (n == 0) return "-"
      for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
      return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
    }
    function fmt(v, d) { return (v == "-" || v == "") ? "-" : sprintf("%." d "f", v) }
    NR > 1 { for (c = 3; c <= NF; c++) v[$1, $2, c] = $c }
    END {
      # label, column, decimals; "total" rows add sluiced and postgres CPU
      n = split("intake 202/s|3|0;intake CPU us/job, sluiced|7|0;intake CPU us/job, postgres server|8|0;intake CPU us/job, total|T7|0;" \
                "intake PG transactions per job|9|2;intake PG WAL flushes per job|10|3;" \
                "e2e submit 202/s|11|0;e2e completed jobs/s|12|0;e2e latency p50 ms|13|1;e2e latency p99 ms|14|1;" \
                "e2e CPU us/job, sluiced|15|0;e2e CPU us/job, postgres server|16|0;e2e CPU us/job, total|T15|0;" \
                "e2e PG transactions per job|18|2;e2e PG WAL flushes per job|19|3", rows, ";")
      for (i = 1; i <= n; i++) {
        split(rows[i], f, "|"); label = f[1]; col = f[2]; dec = f[3]
        line = "| " label
        ratios = ""
        for (d = 1; d <= 2; d++) {
          drv = (d == 1) ? "sqlite" : "postgres"; cells = ""; vals = ""
          for (r = 1; r <= rounds; r++) {
            if (col ~ /^T/) {
              c = substr(col, 2) + 0; a = v[r, drv, c]; b = v[r, drv, c + 1]
              x = (a == "-" || a == "") ? "-" : a + ((b == "-" || b == "") ? 0 : b)
            } else x = v[r, drv, col + 0]
            val[d, r] = x
            cells = cells (r > 1 ? " / " : "") fmt(x, dec)
            if (x != "-" && x != "") vals = vals " " x
          }
          line = line " | " cells " | " fmt(med(vals), dec)
        }
        for (r = 1; r <= rounds; r++)
          if (val[1, r] != "-" && val[1, r] != "" && val[1, r] + 0 > 0 && val[2, r] != "-" && val[2, r] != "")
            ratios = ratios " " val[2, r] / val[1, r]
        printf "%s | %s |\n", line, (ratios == "" ? "-" : sprintf("%.2f", med(ratios)))
      }
    }' "$RESULTS"
  echo
  echo "(the postgres server CPU is that of the whole private cluster: the backends serving sluiced, the WAL writer, the checkpointer, autovacuum)"
  [ "$NON202" = 1 ] && echo "WARNING: some intake responses were not 202 (see above and the raw outputs)"
  [ "$LOST" = 1 ] && echo "WARNING: jobs in a database did not match the 202 count (see above)"
  [ "$DIED" = 1 ] && echo "WARNING: sluiced died during an intake run (see above): its figures are void"
  if [ "$E2E_BAD" = 1 ]; then
    echo "WARNING: an end-to-end run failed its check (duplicates, missing jobs or errors: see above and $PREFIX-r*-e2e.json)"
  else
    echo "end to end: every submitted job was completed exactly once, on both drivers, in every round"
  fi
  if [ "$STATEMENTS" = 1 ]; then
    echo "diagnosis mode (STATEMENTS=1): pg_stat_statements was loaded and pg_stat_activity sampled during each PostgreSQL run, which costs some CPU:"
    echo "  statements per job in $PREFIX-r*-postgres-e2e.json.statements, backend states in $PREFIX-r*-postgres-*.waits"
  fi
} | tee "$PREFIX-summary.txt"
[ "$NON202" = 0 ] && [ "$LOST" = 0 ] && [ "$E2E_BAD" = 0 ] && [ "$DIED" = 0 ]
