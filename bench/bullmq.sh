#!/usr/bin/env bash
# End to end (submit -> lease -> complete) beside BullMQ on Redis, in one run on this
# machine (issue 18): sluice on SQLite with --synchronous FULL (durable per ack, which
# BullMQ is not) and NORMAL (the like-for-like durability of appendfsync everysec), and
# BullMQ 6.7.0 on Redis (../shared/peer-bench's setup: appendonly yes, appendfsync
# everysec), on the same workload, rounds alternating.
#
# Usage: bench/bullmq.sh [rounds]            (default 3; about a minute a round here)
#   env: BUILD_DIR (build); JOBS (20000), TENANTS (10); sluice: SUBMITTERS (48
#        connections on one event loop), WORKERS (8), MAX_JOBS (32), ACK_MODE (lease)
#        for sluice-bench-e2e (WORKERS=10 MAX_JOBS=8 holds as many jobs at once as
#        BullMQ's 10 queues x concurrency 8; docs/performance.md has both); BullMQ:
#        BULLMQ_INFLIGHT (50) concurrent adds, BULLMQ_WCONC (8) worker concurrency per
#        queue (the peer figures' `--mode single --phase concurrent --wconc 8 --inflight 50`).
#
# The workload: JOBS jobs over TENANTS tenants (sluice: one submit token per tenant on one
# queue whose rate and capacity are far above the machine; BullMQ: one queue per tenant),
# submitted one per request while the workers run; completed jobs/s = JOBS / (first
# submit -> last completion). sluice-bench-e2e checks every job completed exactly once
# (client and server totals); bullmq-throughput.js waits for JOBS completions.
# CPU per job: sluiced's (sluice-bench-e2e reads /proc), Redis's (/proc of redis-server,
# over the BullMQ run). Targets (issue 18): NORMAL >= 2 x BullMQ, FULL >= 1.2 x BullMQ,
# as medians of per-round ratios. Raw outputs: var/bench/bullmq-<stamp>-*.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$(pwd)"
source "$ROOT/bench/lib.sh"
ROUNDS="${1:-${ROUNDS:-3}}"
BUILD_DIR="${BUILD_DIR:-build}"
JOBS="${JOBS:-20000}"
TENANTS="${TENANTS:-10}"
SUBMITTERS="${SUBMITTERS:-48}"
WORKERS="${WORKERS:-8}"
MAX_JOBS="${MAX_JOBS:-32}"
ACK_MODE="${ACK_MODE:-lease}"
BULLMQ_INFLIGHT="${BULLMQ_INFLIGHT:-50}"
BULLMQ_WCONC="${BULLMQ_WCONC:-8}"
BULLMQ_VERSION=6.7.0
IOREDIS_VERSION=5.4.1
[[ "$ROUNDS" =~ ^[1-9][0-9]*$ ]] || { echo "rounds must be a positive integer" >&2; exit 2; }

install_missing curl jq node=nodejs npm redis-server
bench_outputs bullmq
REV="$(tree_rev . ':!bench' ':!docs' ':!README.md')"
echo "==> building sluiced and sluice-bench-e2e in $BUILD_DIR (working tree of $REV)"
build_targets scripts/setup.sh "$BUILD_DIR" sluiced sluice-bench-e2e
E2E="$ROOT/$BUILD_DIR/bench/sluice-bench-e2e"
BULLMQ_JS="$ROOT/bench/peers/bullmq-throughput.js"
BULLMQ_DIR="$ROOT/var/peers/bullmq"
npm_peer "$BULLMQ_DIR" bullmq "$BULLMQ_VERSION" "ioredis@$IOREDIS_VERSION"

PIDS=()
DATA_DIRS=()
cleanup() {
  kill_pids
  remove_data_dirs
}
trap cleanup EXIT
trap 'exit 130' INT TERM
HZ="$(getconf CLK_TCK)"

# Redis as the peer measured it, on its own port, in a fresh directory for the run.
REDIS_DIR="$(mktemp -d "$ROOT/$OUT/redis.XXXXXX")"
DATA_DIRS+=("$REDIS_DIR")
REDIS_PORT=$((20000 + RANDOM % 40000))
redis-server --bind 127.0.0.1 --port "$REDIS_PORT" --dir "$REDIS_DIR" --appendonly yes \
  --appendfsync everysec --save '' --maxmemory-policy noeviction \
  --logfile "$REDIS_DIR/redis.log" &
REDIS_PID=$!
PIDS+=("$REDIS_PID")
for _ in $(seq 100); do
  redis-cli -p "$REDIS_PORT" ping >/dev/null 2>&1 && break
  sleep 0.1
done
redis-cli -p "$REDIS_PORT" ping >/dev/null || { echo "redis-server did not start" >&2; exit 1; }

RESULTS="$PREFIX-results.tsv"
: >"$RESULTS"

run_sluice() {  # run_sluice <round> <FULL|NORMAL>
  local round="$1" sync="$2" file="$ROOT/$PREFIX-r$1-sluice-$2" rc=0
  SLUICE_ADMIN_TOKEN="bench-admin-$RANDOM$RANDOM" timeout -k 5 900 "$E2E" \
    --server-arg=--synchronous --server-arg="$sync" --server-arg=--no-access-log \
    --jobs "$JOBS" --tenants "$TENANTS" --submitters "$SUBMITTERS" --workers "$WORKERS" \
    --max-jobs "$MAX_JOBS" --ack-mode "$ACK_MODE" >"$file.json" 2>"$file.err" || rc=$?
  if ! jq -e '.check.ok' "$file.json" >/dev/null 2>&1; then
    echo "   !! sluice $sync: exit $rc, check failed or no JSON; stderr:" >&2
    tail -n 10 "$file.err" >&2
    exit 1
  fi
  jq -r --arg r "$round" --arg c "sluice-$sync" \
    '[$r, $c, .e2e_jobs_per_s, .latency_ms.p50, .latency_ms.p99, .sluiced_cpu_us_per_job] | map(tostring) | join("\t")' \
    "$file.json" >>"$RESULTS"
  tail -n 1 "$RESULTS" | awk -F'\t' '{printf "   %-13s %6s jobs/s  submit->complete p50 %s p99 %s ms  server CPU %s us/job\n", $2, $3, $4, $5, $6}'
}

run_bullmq() {  # run_bullmq <round>
  local round="$1" file="$ROOT/$PREFIX-r$1-bullmq" rc=0 t0 t1 n
  redis-cli -p "$REDIS_PORT" flushall >/dev/null
  t0="$(cpu_ticks "$REDIS_PID")"
  (cd "$BULLMQ_DIR" && NODE_PATH="$BULLMQ_DIR/node_modules" timeout -k 5 900 node "$BULLMQ_JS" \
    --mode single --phase concurrent --n "$JOBS" --tenants "$TENANTS" --wconc "$BULLMQ_WCONC" \
    --inflight "$BULLMQ_INFLIGHT" --port "$REDIS_PORT" >"$file.json" 2>"$file.err") || rc=$?
  t1="$(cpu_ticks "$REDIS_PID")"
  if ! jq -e '.completed_jobs_per_s' "$file.json" >/dev/null 2>&1; then
    echo "   !! bullmq: exit $rc, no JSON; stderr:" >&2
    tail -n 10 "$file.err" >&2
    exit 1
  fi
  n="$(jq -r .n "$file.json")"
  jq -r --arg r "$round" --arg cpu "$(ticks_us_per_job $((t1 - t0)) "$n")" \
    '[$r, "bullmq", .completed_jobs_per_s, .e2e_latency_ms.p50, .e2e_latency_ms.p99, $cpu] | map(tostring) | join("\t")' \
    "$file.json" >>"$RESULTS"
  tail -n 1 "$RESULTS" | awk -F'\t' '{printf "   %-13s %6s jobs/s  add->complete p50 %s p99 %s ms  Redis CPU %s us/job\n", $2, $3, $4, $5, $6}'
}

for r in $(seq "$ROUNDS"); do
  echo "==> round $r of $ROUNDS"
  if [ $((r % 2)) = 1 ]; then
    run_bullmq "$r"; run_sluice "$r" FULL; run_sluice "$r" NORMAL
  else
    run_sluice "$r" NORMAL; run_sluice "$r" FULL; run_bullmq "$r"
  fi
done

median() { sort -g | awk '{v[NR] = $1} END {if (NR % 2) print v[(NR + 1) / 2]; else printf "%.3f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
col() { awk -F'\t' -v c="$1" -v k="$2" '$2 == c {print $k}' "$RESULTS"; }
ratio() {  # per-round ratio of config $1 to bullmq, median
  awk -F'\t' -v c="$1" '$2 == c {s[$1] = $3} $2 == "bullmq" {b[$1] = $3} END {for (r in s) if (b[r] > 0) printf "%.3f\n", s[r] / b[r]}' "$RESULTS" | median
}
echo
echo "medians of $ROUNDS rounds ($REV; $JOBS jobs, $TENANTS tenants):"
printf '%-14s %9s %9s %9s %14s %14s\n' "" "jobs/s" "p50 ms" "p99 ms" "CPU us/job" "x BullMQ"
for c in bullmq sluice-FULL sluice-NORMAL; do
  x="-"
  [ "$c" != bullmq ] && x="$(ratio "$c")"
  printf '%-14s %9s %9s %9s %14s %14s\n' "$c" "$(col "$c" 3 | median)" "$(col "$c" 4 | median)" \
    "$(col "$c" 5 | median)" "$(col "$c" 6 | median)" "$x"
done
echo "targets (issue 18): sluice-NORMAL >= 2 x BullMQ, sluice-FULL >= 1.2 x BullMQ"
