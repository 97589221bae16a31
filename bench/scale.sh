#!/usr/bin/env bash
# Cost against backlog (issue 18): build/bench/sluice-bench-scale (see bench/scale.cc)
# on a real sluiced, SQLite FULL: lease latency, drain rate and CPU per job, submit
# latency while draining, memory and restart, with 1k jobs over 1k tenants beside 1M
# jobs over 10k tenants, both up at once and measured in rounds that alternate between
# them (medians of the rounds, and of their ratios). Prints the table; raw output:
# var/bench/scale-<stamp>.txt.
#
# Usage: bench/scale.sh [sluice-bench-scale flags]    (about a minute with the defaults)
#   e.g. bench/scale.sh --fill-run 1: each tenant's jobs admitted interleaved with the
#   others' rather than in one batch per tenant (the default, and the hard case); about
#   three minutes.
#   env: BUILD_DIR (build); DRIVER (sqlite, or postgres: a private PostgreSQL 15 cluster
#        on this disk with default settings, a fresh database for each backlog, and its
#        CPU reported beside sluiced's); PGBIN (/usr/lib/postgresql/15/bin).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$(pwd)"
source "$ROOT/bench/lib.sh"
BUILD_DIR="${BUILD_DIR:-build}"

bench_outputs scale
REV="$(tree_rev . ':!bench' ':!docs' ':!README.md')"
echo "==> building sluice-bench-scale in $BUILD_DIR (working tree of $REV)"
build_targets scripts/setup.sh "$BUILD_DIR" sluice-bench-scale sluiced
DRIVER="${DRIVER:-sqlite}"
args=()
if [ "$DRIVER" = postgres ]; then
  PGBIN="${PGBIN:-/usr/lib/postgresql/15/bin}"
  PGDIR=""
  trap stop_postgres EXIT
  require_pg_tools
  start_postgres "$ROOT/$OUT"
  new_database
  args+=(--db-small "$PG_URI")
  new_database
  args+=(--db-large "$PG_URI" --pg-pid "$PM_PID")
elif [ "$DRIVER" != sqlite ]; then
  echo "DRIVER must be sqlite or postgres" >&2
  exit 2
fi
echo "==> driver: $DRIVER"
"$ROOT/$BUILD_DIR/bench/sluice-bench-scale" "${args[@]}" "$@" | tee "$PREFIX.txt"
echo "(revision $REV)"
