#!/usr/bin/env bash
# Two builds of sluiced side by side, under the same load at the same time: the A/B of a
# change whose effect is smaller than this shared machine's drift. Run one after the
# other, two 10 s intake runs of the same binary differ by up to 30 % here (the host's
# speed changes within minutes); run at once, each round's two servers see the same
# host, and their ratio moved less than 1 % between the rounds of an A/A run.
#
# Usage: bench/ab.sh <sluiced A> <sluiced B> [rounds]      (default 5)
#   env: MODE intake (default) | e2e, SYNC NORMAL (default) | FULL, DURATION (10s, intake),
#        CONNS (8 per server, intake), JOBS (20000 per server, e2e), TENANTS (10, e2e),
#        SUBMITTERS (24 per server, e2e), WORKERS (4 per server, e2e), ACCESS_LOG (0: off;
#        1: on, sluiced's default, as bench/intake.sh runs it).
#   A and B are paths to sluiced binaries (copy one aside before rebuilding the other).
#
# Each round starts A and B on fresh SQLite files, then loads both at once:
#   intake: wrk -t1 -c$CONNS POST /v1/queues/intake/jobs on each (bench/intake.lua);
#   e2e:    build/bench/sluice-bench-e2e --server <url> on each (submit, lease, complete;
#           every job checked completed exactly once), half bench/bullmq.sh's load each.
# It prints each server's jobs/s and CPU per job (utime + stime from /proc, all threads)
# and B/A for both; at the end, the medians of B/A over the rounds. Odd rounds start A's
# load first, even rounds B's. Figures are for comparing A with B only: each server has
# half the machine.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$(pwd)"
source "$ROOT/bench/lib.sh"
[ $# -ge 2 ] || { sed -n '2,22p' "$0" >&2; exit 2; }
A="$(realpath "$1")" B="$(realpath "$2")"
ROUNDS="${3:-5}"
MODE="${MODE:-intake}"
SYNC="${SYNC:-NORMAL}"
DURATION="${DURATION:-10s}"
CONNS="${CONNS:-8}"
JOBS="${JOBS:-20000}"
TENANTS="${TENANTS:-10}"
SUBMITTERS="${SUBMITTERS:-24}"
WORKERS="${WORKERS:-4}"
ACCESS_LOG="${ACCESS_LOG:-0}"
KEEP_DATA=0
[[ "$ROUNDS" =~ ^[1-9][0-9]*$ ]] || { echo "rounds must be a positive integer" >&2; exit 2; }
for bin in "$A" "$B"; do [ -x "$bin" ] || { echo "not an executable: $bin" >&2; exit 2; }; done
case "$MODE" in
  intake) install_missing wrk curl jq ;;
  e2e)
    install_missing curl jq
    E2E="$ROOT/build/bench/sluice-bench-e2e"
    [ -x "$E2E" ] || { echo "build $E2E first (cmake --build build --target sluice-bench-e2e)" >&2; exit 2; }
    ;;
  *) echo "MODE must be intake or e2e" >&2; exit 2 ;;
esac

bench_outputs ab
PIDS=() DATA_DIRS=()
trap 'kill_pids; remove_data_dirs' EXIT
ADMIN="bench-admin-$RANDOM$RANDOM$RANDOM"

# start <binary> <label>: a sluiced on a fresh file; sets <label>_PID, <label>_URL and,
# for intake, <label>_TOKEN (a submit token of queue "intake", which takes everything).
start() {
  local dir
  dir="$(mktemp -d "$ROOT/$OUT/ab-data.XXXXXX")"
  DATA_DIRS+=("$dir")
  local log=(--no-access-log)
  [ "$ACCESS_LOG" = 1 ] && log=()
  SLUICED="$1" start_sluiced "$dir/sluice.db" "$dir/sluiced" --synchronous "$SYNC" "${log[@]}"
  printf -v "$2_PID" '%s' "$S_PID"
  printf -v "$2_URL" '%s' "$S_URL"
  [ "$MODE" = intake ] || return 0
  curl -fsS --max-time 5 -X PUT -H "Authorization: Bearer $ADMIN" -H 'Content-Type: application/json' \
    -d '{"rate":1000000,"capacity":100000000}' "$S_URL/v1/admin/queues/intake" >/dev/null
  printf -v "$2_TOKEN" '%s' "$(curl -fsS --max-time 5 -X POST -H "Authorization: Bearer $ADMIN" \
    -H 'Content-Type: application/json' -d '{"scopes":["submit"],"tenant":"bench"}' \
    "$S_URL/v1/admin/tokens" | jq -er .token)"
}

# load <label> <raw output>: the round's load on one server, in the background (LOAD_PID).
load() {
  local url_var="$1_URL" pid_var="$1_PID" token_var="$1_TOKEN" url pid
  url="${!url_var}" pid="${!pid_var}"
  if [ "$MODE" = intake ]; then
    SLUICE_BENCH_TOKEN="${!token_var}" wrk -t1 -c"$CONNS" -d"$DURATION" -s "$ROOT/bench/intake.lua" \
      "$url/v1/queues/intake/jobs" >"$2" 2>&1 &
  else
    SLUICE_ADMIN_TOKEN="$ADMIN" "$E2E" --server "$url" --sluiced-pid "$pid" --jobs "$JOBS" \
      --tenants "$TENANTS" --submitters "$SUBMITTERS" --workers "$WORKERS" --max-jobs 32 \
      --ack-mode lease >"$2" 2>"$2.err" &
  fi
  LOAD_PID=$!
}

# jobs_and_cpu <raw output> <ticks> : "<jobs/s> <CPU µs per job>"
jobs_and_cpu() {
  if [ "$MODE" = intake ]; then
    local n s
    n="$(awk '/^intake-202:/ {print $2}' "$1")" s="$(awk '/^intake-seconds:/ {print $2}' "$1")"
    [ -n "$n" ] && [ "$n" -gt 0 ] || { echo "no 202s in $1" >&2; cat "$1" >&2; return 1; }
    awk -v n="$n" -v s="$s" -v t="$2" -v hz="$(getconf CLK_TCK)" \
      'BEGIN {printf "%.0f %.1f\n", n / s, t * 1e6 / hz / n}'
  else
    jq -e '.check.ok' "$1" >/dev/null || { echo "e2e check failed: $1" >&2; cat "$1.err" >&2; return 1; }
    jq -r '"\(.e2e_jobs_per_s | floor) \(.sluiced_cpu_us_per_job)"' "$1"
  fi
}

echo "== A/B ($MODE, --synchronous $SYNC, $ROUNDS rounds): A = $A, B = $B"
RATIOS_CPU=() RATIOS_JOBS=()
for r in $(seq "$ROUNDS"); do
  start "$A" A
  start "$B" B
  a0="$(cpu_ticks "$A_PID")" b0="$(cpu_ticks "$B_PID")"
  if [ $((r % 2)) -eq 1 ]; then order="A B"; else order="B A"; fi
  waits=()
  for side in $order; do
    load "$side" "$PREFIX-$r-$side.txt"
    waits+=("$LOAD_PID")
  done
  for w in "${waits[@]}"; do wait "$w"; done
  a1="$(cpu_ticks "$A_PID")" b1="$(cpu_ticks "$B_PID")"
  read -r ja ca <<<"$(jobs_and_cpu "$PREFIX-$r-A.txt" $((a1 - a0)))"
  read -r jb cb <<<"$(jobs_and_cpu "$PREFIX-$r-B.txt" $((b1 - b0)))"
  rc="$(awk -v a="$ca" -v b="$cb" 'BEGIN {printf "%.3f", b / a}')"
  rj="$(awk -v a="$ja" -v b="$jb" 'BEGIN {printf "%.3f", b / a}')"
  RATIOS_CPU+=("$rc") RATIOS_JOBS+=("$rj")
  printf 'round %d (%s first): A %6s jobs/s %6s us/job | B %6s jobs/s %6s us/job | B/A: CPU per job %s, jobs/s %s\n' \
    "$r" "${order%% *}" "$ja" "$ca" "$jb" "$cb" "$rc" "$rj"
  for p in "$A_PID" "$B_PID"; do stop_pid "$p" 20; forget_pid "$p"; done
done
median() { printf '%s\n' "$@" | sort -n | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
echo "median B/A over $ROUNDS rounds: CPU per job $(median "${RATIOS_CPU[@]}"), jobs/s $(median "${RATIOS_JOBS[@]}")"
echo "raw outputs: $PREFIX-*"
