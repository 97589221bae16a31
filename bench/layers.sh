#!/usr/bin/env bash
# What the intake-protection layers cost per request, on each storage driver (issue 17):
# durable single-job intake (bench/intake.lua, wrk) through 0, 1 and 3 layers guarding
# the submit route group, in one run on this machine.
#
# Usage: bench/layers.sh [rounds]            (default 3; about a minute per round)
#   env: BUILD_DIR (build), DURATION (8s), CONNS (16), WRK_THREADS (2), DB_POOL (8),
#        PGBIN (/usr/lib/postgresql/15/bin).
#
# Configurations (each with limits far above what the run reaches, so every request is
# admitted and the figures are the decision's cost, not refusals):
#   none: PUT /v1/admin/limits {"layers": []} (nothing guards submit);
#   1:    gcra per token (the quota layer docs/algorithms.md recommends);
#   3:    gcra per token, fixed_window per client ip, sliding_window_counter per tenant.
# Each round runs every (driver, configuration) once, drivers alternating first, each on
# a fresh sluiced and a fresh SQLite file / PostgreSQL database. Reported per run:
# 202/s and sluiced's CPU µs per 202 (utime + stime from /proc), on PostgreSQL also the
# cluster's CPU µs per 202; then medians, and each configuration against `none` of the
# same driver and round (ratios' median). Raw outputs: var/bench/layers-<stamp>-*.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$(pwd)"
source "$ROOT/bench/lib.sh"
ROUNDS="${1:-${ROUNDS:-3}}"
BUILD_DIR="${BUILD_DIR:-build}"
DURATION="${DURATION:-8s}"
CONNS="${CONNS:-16}"
WRK_THREADS="${WRK_THREADS:-2}"
DB_POOL="${DB_POOL:-8}"
PGBIN="${PGBIN:-/usr/lib/postgresql/15/bin}"
KEEP_DATA=0
[[ "$ROUNDS" =~ ^[1-9][0-9]*$ ]] || { echo "rounds must be a positive integer" >&2; exit 2; }

install_missing wrk curl jq
bench_outputs layers
REV="$(tree_rev . ':!bench' ':!docs' ':!README.md')"
echo "==> building sluiced in $BUILD_DIR (working tree of $REV)"
build_targets scripts/setup.sh "$BUILD_DIR" sluiced
SLUICED="$ROOT/$BUILD_DIR/server/sluiced"
LUA="$ROOT/bench/intake.lua"
DUR_S="${DURATION%s}"
WRK_LIMIT=$((DUR_S + 30))
require_pg_tools

PGDIR=""
PGPORT=""
PIDS=()
DATA_DIRS=()
cleanup() {
  kill_pids
  stop_postgres
  remove_data_dirs
}
trap cleanup EXIT
trap 'exit 130' INT TERM
ADMIN="bench-admin-$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')"

layers_json() {  # layers_json <none|1|3>
  local token='{"name":"per_token","algorithm":"gcra","limit":100000000,"window_s":1,"burst":100000000,"key":["token"],"route_groups":["submit"]}'
  local ip='{"name":"per_ip","algorithm":"fixed_window","limit":100000000,"window_s":60,"key":["ip"],"route_groups":["submit"]}'
  local tenant='{"name":"per_tenant","algorithm":"sliding_window_counter","limit":100000000,"window_s":60,"key":["tenant"],"route_groups":["submit"]}'
  case "$1" in
    none) echo '{"layers":[]}' ;;
    1) echo "{\"layers\":[$token]}" ;;
    3) echo "{\"layers\":[$token,$ip,$tenant]}" ;;
  esac
}

# Sets R_RPS, R_CPU, R_PG (µs per 202; "-" on SQLite).
run_one() {  # run_one <sqlite|postgres> <none|1|3> <raw-output-file>
  local driver="$1" config="$2" file="$3" dir db pid url token t0 t1 p0=0 p1=0 rc=0
  local args=()
  dir="$(mktemp -d "$ROOT/$OUT/layers-data.XXXXXX")"
  DATA_DIRS+=("$dir")
  if [ "$driver" = sqlite ]; then
    db="$dir/sluice.db"
  else
    new_database
    db="$PG_URI"
    args=(--db-pool "$DB_POOL")
  fi
  start_sluiced "$db" "$dir/sluiced" --no-access-log "${args[@]}"
  pid="$S_PID" url="$S_URL"
  curl -fsS --max-time 5 -X PUT -H "Authorization: Bearer $ADMIN" \
    -d '{"rate":1000000,"capacity":100000000}' "$url/v1/admin/queues/intake" >/dev/null
  curl -fsS --max-time 5 -X PUT -H "Authorization: Bearer $ADMIN" \
    -d "$(layers_json "$config")" "$url/v1/admin/limits" >/dev/null
  token="$(curl -fsS --max-time 5 -X POST -H "Authorization: Bearer $ADMIN" \
    -d '{"scopes":["submit"],"tenant":"bench"}' "$url/v1/admin/tokens" | jq -er .token)"
  [ "$driver" = postgres ] && p0="$(pg_ticks)"
  t0="$(cpu_ticks "$pid")"
  SLUICE_BENCH_TOKEN="$token" timeout -k 5 "$WRK_LIMIT" wrk -t"$WRK_THREADS" -c"$CONNS" \
    -d"$DURATION" -s "$LUA" "$url/v1/queues/intake/jobs" >"$file" 2>&1 || rc=$?
  t1="$(cpu_ticks "$pid")"
  [ "$driver" = postgres ] && p1="$(pg_ticks)"
  stop_pid "$pid" 20
  forget_pid "$pid"
  [ "$rc" = 0 ] || { echo "wrk failed (see $file)" >&2; return 1; }
  local ok bad
  ok="$(awk '/^intake-202:/ {print $2}' "$file")"
  bad="$(awk '/^intake-non202:/ {print $2}' "$file")"
  [ "${bad:-0}" = 0 ] || { echo "$driver/$config: $bad answers were not 202 (see $file)" >&2; return 1; }
  R_RPS="$(awk '/^intake-202-per-s:/ {printf "%.0f", $2}' "$file")"
  R_CPU="$(ticks_us_per_job $((t1 - t0)) "$ok")"
  R_PG="-"
  [ "$driver" = postgres ] && R_PG="$(ticks_us_per_job $((p1 - p0)) "$ok")"
  echo "server-cpu-ticks: $((t1 - t0)); postgres-cpu-ticks: $((p1 - p0))" >>"$file"
}

start_postgres "$ROOT/$OUT"
declare -A RPS CPU PG
for r in $(seq "$ROUNDS"); do
  drivers=(sqlite postgres)
  [ $((r % 2)) = 0 ] && drivers=(postgres sqlite)
  for d in "${drivers[@]}"; do
    for c in none 1 3; do
      run_one "$d" "$c" "$PREFIX-r$r-$d-$c.txt"
      RPS[$d,$c,$r]="$R_RPS" CPU[$d,$c,$r]="$R_CPU" PG[$d,$c,$r]="$R_PG"
      printf 'round %d  %-8s layers %-4s  %6s 202/s  sluiced %5s µs/202  postgres %5s µs/202\n' \
        "$r" "$d" "$c" "$R_RPS" "$R_CPU" "$R_PG"
    done
  done
done

median() { sort -g | awk '{v[NR] = $1} END {if (NR == 0) print "-"; else if (NR % 2) print v[(NR + 1) / 2]; else printf "%.3f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
echo
echo "medians of $ROUNDS rounds ($REV, wrk -t$WRK_THREADS -c$CONNS -d$DURATION, intake through the layers):"
printf '%-8s %-6s %9s %16s %17s %14s %20s\n' driver layers "202/s" "sluiced µs/202" "postgres µs/202" "202/s vs none" "sluiced µs vs none"
for d in sqlite postgres; do
  for c in none 1 3; do
    rps="$(for r in $(seq "$ROUNDS"); do echo "${RPS[$d,$c,$r]}"; done | median)"
    cpu="$(for r in $(seq "$ROUNDS"); do echo "${CPU[$d,$c,$r]}"; done | median)"
    pg="$(for r in $(seq "$ROUNDS"); do echo "${PG[$d,$c,$r]}"; done | { grep -v '^-$' || true; } | median)"
    rr="$(for r in $(seq "$ROUNDS"); do awk -v a="${RPS[$d,$c,$r]}" -v b="${RPS[$d,none,$r]}" 'BEGIN {printf "%.3f\n", a / b}'; done | median)"
    cr="$(for r in $(seq "$ROUNDS"); do awk -v a="${CPU[$d,$c,$r]}" -v b="${CPU[$d,none,$r]}" 'BEGIN {printf "%.3f\n", a / b}'; done | median)"
    printf '%-8s %-6s %9s %16s %17s %14s %20s\n' "$d" "$c" "$rps" "$cpu" "$pg" "$rr" "$cr"
  done
done
