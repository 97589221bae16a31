#!/usr/bin/env bash
# Runs the tests under sanitizers, built with clang; any report fails the run:
#   asan  the unit and store tests (ctest label "unit") and the fuzz corpora ("fuzz")
#         under ASan+UBSan, in build-asan. That build also has the fuzzer's coverage
#         instrumentation, so scripts/fuzz.sh reuses it instead of compiling again.
#   tsan  the store tests (the concurrency tests: writer, lookahead, checkpointer; and
#         the rest, which cost seconds more) and the dispatcher test under TSan, in
#         build-tsan.
# Installs what is missing (scripts/setup.sh --install-only). Idempotent.
# Usage: scripts/sanitize.sh [--build-only] [asan] [tsan]     (default: both)
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD_ONLY=0
KINDS=()
for a in "$@"; do
  case "$a" in
    --build-only) BUILD_ONLY=1 ;;
    asan | tsan) KINDS+=("$a") ;;
    *) echo "usage: $0 [--build-only] [asan] [tsan]" >&2; exit 2 ;;
  esac
done
[ ${#KINDS[@]} -eq 0 ] && KINDS=(asan tsan)

scripts/setup.sh --install-only
JOBS="$(nproc)"
[ "$JOBS" -gt 2 ] || JOBS=2

# Every report is fatal and names its stack; leaks count (LeakSanitizer, with ASan).
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:strict_string_checks=1:check_initialization_order=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
export TSAN_OPTIONS="${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1}"

configure() {  # build-dir sanitizers [extra cmake args...]
  local dir="$1" sanitizers="$2"
  shift 2
  echo "==> configuring $dir (clang, -fsanitize=$sanitizers)"
  # -O1 as the sanitizers advise, line tables for the stacks (full debug information
  # doubles the build), asserts on; the tests themselves build at -O0 (tests/CMakeLists).
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only" \
    -DSLUICE_SANITIZE="$sanitizers" "$@" >/dev/null
}

for kind in "${KINDS[@]}"; do
  case "$kind" in
    asan)
      configure build-asan address,undefined -DSLUICE_FUZZ=ON
      echo "==> building build-asan"
      cmake --build build-asan -j"$JOBS" --target common_tests shaper_tests store_tests \
        server_tests client_tests worker_tests cli_tests fuzz_targets
      [ "$BUILD_ONLY" -eq 1 ] && continue
      echo "==> ASan+UBSan: unit and store tests, fuzz corpora"
      ctest --test-dir build-asan -L 'unit|fuzz' --output-on-failure -j2
      ;;
    tsan)
      configure build-tsan thread
      echo "==> building build-tsan"
      cmake --build build-tsan -j"$JOBS" --target store_tests server_tests
      [ "$BUILD_ONLY" -eq 1 ] && continue
      echo "==> TSan: store tests (writer, lookahead, checkpointer, store, PostgreSQL driver), the"
      echo "    conformance suite on PostgreSQL, the dispatcher"
      build-tsan/tests/store_tests
      SLUICE_TEST_DRIVER=postgres build-tsan/tests/store_tests "[store]"
      build-tsan/tests/server_tests "[dispatcher]"
      ;;
  esac
done
echo "==> sanitizers: clean"
