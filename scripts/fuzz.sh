#!/usr/bin/env bash
# Runs each libFuzzer target of tests/fuzz for a fixed time under ASan+UBSan, starting
# from its committed seed corpus (tests/fuzz/corpus/<target>, never written to) plus
# what earlier runs here found (build-asan/fuzz/corpus/<target>), and prints per
# target the executions and whether it found anything. A finding (crash, sanitizer
# report, leak, timeout, out-of-memory) is kept in build-asan/fuzz/findings/<target>/
# (until that target runs again) and fails the run. Builds with scripts/sanitize.sh --build-only asan (same build).
# Runs as many targets at once as there are cores (FUZZ_JOBS overrides).
# Usage: scripts/fuzz.sh [seconds-per-target [target...]]   (default: 30, every target)
set -euo pipefail
cd "$(dirname "$0")/.."

SECONDS_EACH="${1:-30}"
shift || true
TARGETS=("$@")
if [ ${#TARGETS[@]} -eq 0 ]; then
  TARGETS=()
  for f in tests/fuzz/fuzz_*.cc; do TARGETS+=("$(basename "$f" .cc)"); done
fi

scripts/sanitize.sh --build-only asan
BUILD=build-asan
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:strict_string_checks=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"

# Long enough for deep nesting in the JSON readers and whole requests with bodies.
max_len() {
  case "$1" in
    fuzz_rfc3339) echo 256 ;;
    fuzz_router) echo 8192 ;;
    fuzz_client_ip) echo 8192 ;;
    fuzz_client) echo 8192 ;;
    *) echo 200000 ;;
  esac
}

# One target: its log, and its exit status in <log>.rc.
fuzz_one() {
  local t="$1" bin="$BUILD/tests/fuzz/$1" work="$BUILD/fuzz/corpus/$1"
  local findings="$BUILD/fuzz/findings/$1" log="$BUILD/fuzz/$1.log" dict=() rc=0
  rm -rf "$findings"  # what an earlier run found stays until this target runs again
  mkdir -p "$work" "$findings"
  [ -f "tests/fuzz/$t.dict" ] && dict=(-dict="tests/fuzz/$t.dict")
  "$bin" "$work" "tests/fuzz/corpus/$t" "${dict[@]}" -max_total_time="$SECONDS_EACH" \
    -max_len="$(max_len "$t")" -timeout=10 -rss_limit_mb=2048 -artifact_prefix="$findings/" \
    -print_final_stats=1 >"$log" 2>&1 || rc=$?
  echo "$rc" >"$log.rc"
}

for t in "${TARGETS[@]}"; do
  [ -x "$BUILD/tests/fuzz/$t" ] || { echo "no fuzz target $BUILD/tests/fuzz/$t" >&2; exit 2; }
  [ -d "tests/fuzz/corpus/$t" ] || { echo "no seed corpus tests/fuzz/corpus/$t" >&2; exit 2; }
done
# As many targets at once as there are cores (each fuzzes on one thread).
JOBS="${FUZZ_JOBS:-$(nproc)}"
mkdir -p "$BUILD/fuzz"
for t in "${TARGETS[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n || true; done
  echo "==> fuzzing $t for ${SECONDS_EACH}s (log: $BUILD/fuzz/$t.log)"
  rm -f "$BUILD/fuzz/$t.log.rc"
  fuzz_one "$t" &
done
wait

failed=()
summary=()
for t in "${TARGETS[@]}"; do
  log="$BUILD/fuzz/$t.log"
  rc="$(cat "$log.rc" 2>/dev/null || echo '?')"
  execs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)"
  if [ "$rc" = "0" ]; then
    verdict="nothing found"
  else
    verdict="FOUND something (exit $rc): $(ls "$BUILD/fuzz/findings/$t" | head -3 | tr '\n' ' ')"
    failed+=("$t")
    echo "---- $log (tail)"
    tail -40 "$log"
    echo "---- reproduce: $BUILD/tests/fuzz/$t $BUILD/fuzz/findings/$t/<file>"
  fi
  summary+=("$(printf '%-22s %10s execs  %s' "$t" "${execs:-?}" "$verdict")")
done

echo "==> fuzz summary (${SECONDS_EACH}s per target)"
printf '%s\n' "${summary[@]}"
if [ ${#failed[@]} -gt 0 ]; then
  echo "==> fuzzing found something in: ${failed[*]}" >&2
  exit 1
fi
