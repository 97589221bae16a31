#!/usr/bin/env bash
# Runs each libFuzzer target of tests/fuzz for a fixed time under ASan+UBSan, starting
# from its committed seed corpus (tests/fuzz/corpus/<target>, never written to) plus
# what earlier runs here found (build-asan/fuzz/corpus/<target>), and prints per
# target the executions and whether it found anything. A finding (crash, sanitizer
# report, leak, timeout, out-of-memory) is kept in build-asan/fuzz/findings/<target>/
# and fails the run. Builds with scripts/sanitize.sh --build-only asan (same build).
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
    *) echo 200000 ;;
  esac
}

failed=()
summary=()
for t in "${TARGETS[@]}"; do
  bin="$BUILD/tests/fuzz/$t"
  seeds="tests/fuzz/corpus/$t"
  [ -x "$bin" ] || { echo "no fuzz target $bin" >&2; exit 2; }
  [ -d "$seeds" ] || { echo "no seed corpus $seeds" >&2; exit 2; }
  work="$BUILD/fuzz/corpus/$t"
  findings="$BUILD/fuzz/findings/$t"
  log="$BUILD/fuzz/$t.log"
  mkdir -p "$work" "$findings"
  dict=()
  [ -f "tests/fuzz/$t.dict" ] && dict=(-dict="tests/fuzz/$t.dict")
  echo "==> fuzzing $t for ${SECONDS_EACH}s (log: $log)"
  rc=0
  "$bin" "$work" "$seeds" "${dict[@]}" -max_total_time="$SECONDS_EACH" -max_len="$(max_len "$t")" \
    -timeout=10 -rss_limit_mb=2048 -artifact_prefix="$findings/" -print_final_stats=1 \
    >"$log" 2>&1 || rc=$?
  execs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)"
  if [ "$rc" -eq 0 ]; then
    verdict="nothing found"
  else
    verdict="FOUND something (exit $rc): $(ls "$findings" | head -3 | tr '\n' ' ')"
    failed+=("$t")
    echo "---- $log (tail)"
    tail -40 "$log"
    echo "---- reproduce: $bin $findings/<file>"
  fi
  summary+=("$(printf '%-20s %10s execs  %s' "$t" "${execs:-?}" "$verdict")")
done

echo "==> fuzz summary (${SECONDS_EACH}s per target)"
printf '%s\n' "${summary[@]}"
if [ ${#failed[@]} -gt 0 ]; then
  echo "==> fuzzing found something in: ${failed[*]}" >&2
  exit 1
fi
