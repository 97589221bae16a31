#!/usr/bin/env bash
# Batch intake (issue 18): POST /v1/queues/{queue}/jobs:batch with 1000-job batches on
# a real sluiced (SQLite) beside a raw SQLite batched insert of the same rows into the
# same table, and into the simpler table of ../shared/peer-bench/sqlite_bench.c; rounds
# alternate, on fresh databases (build/bench/sluice-bench-batch, see bench/batch.cc).
# Runs it with --synchronous FULL, then NORMAL (the raw inserts use the same level).
#
# Usage: bench/batch.sh [rounds]        (default 5; about 10 s per round and level)
#   env: BUILD_DIR (build), JOBS (200000 per round and side), CONNECTIONS (2).
# Prints every round, then per level the medians; raw outputs: var/bench/batch-<stamp>-*.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$(pwd)"
source "$ROOT/bench/lib.sh"
ROUNDS="${1:-${ROUNDS:-5}}"
BUILD_DIR="${BUILD_DIR:-build}"
JOBS="${JOBS:-200000}"
CONNECTIONS="${CONNECTIONS:-2}"
[[ "$ROUNDS" =~ ^[1-9][0-9]*$ ]] || { echo "rounds must be a positive integer" >&2; exit 2; }

install_missing jq
bench_outputs batch
REV="$(tree_rev . ':!bench' ':!docs' ':!README.md')"
echo "==> building sluice-bench-batch in $BUILD_DIR (working tree of $REV)"
build_targets scripts/setup.sh "$BUILD_DIR" sluice-bench-batch sluiced
BENCH="$ROOT/$BUILD_DIR/bench/sluice-bench-batch"

for level in FULL NORMAL; do
  echo "==> synchronous $level: $ROUNDS rounds of $JOBS jobs, batches of 1000, $CONNECTIONS connections"
  "$BENCH" --rounds "$ROUNDS" --jobs "$JOBS" --connections "$CONNECTIONS" \
    --synchronous "$level" | tee "$PREFIX-$level.txt"
done

echo
echo "batch intake, medians of $ROUNDS rounds (revision $REV):"
printf '%-8s %16s %16s %14s %10s %12s %14s\n' level "raw (sluice tbl)" "raw (peer tbl)" "jobs:batch/s" "x sluice" "x peer tbl" "sluiced us/job"
for level in FULL NORMAL; do
  tail -n 1 "$PREFIX-$level.txt" | jq -r --arg l "$level" \
    '[$l, (.raw_rows_per_s|floor), (.peer_table_rows_per_s|floor), (.batch_jobs_per_s|floor),
      (.ratio*100|floor/100), (.ratio_to_peer_table*100|floor/100), .sluiced_cpu_us_per_job] | @tsv' |
    awk -F'\t' '{printf "%-8s %16s %16s %14s %10s %12s %14.1f\n", $1, $2, $3, $4, $5, $6, $7}'
done
