#!/usr/bin/env bash
# Release precision, sluice beside BullMQ, in one run on this machine (issue 3).
# Builds sluice, runs BullMQ's limiter (bench/peers/bullmq_limiter.sh) and then
# sluice's precision benchmark (workloads a and b), saves the JSON under var/bench/
# and prints a side-by-side table. Takes about two minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR="${BUILD_DIR:-build}"
scripts/setup.sh "$BUILD_DIR" sluiced sluice-bench-precision >/dev/null
OUT=var/bench
mkdir -p "$OUT"
echo "==> BullMQ limiter {max:10, duration:1000}, 200 jobs queued, worker concurrency 4"
bench/peers/bullmq_limiter.sh >"$OUT/bullmq-limiter.json" 2>"$OUT/bullmq-limiter.err"
echo "==> sluice: (a) 1 tenant at 10 jobs/s, 200 jobs queued, 4 workers; (b) $*"
"$BUILD_DIR"/bench/sluice-bench-precision "$@" >"$OUT/sluice-precision.json"

jq -r -n --slurpfile b "$OUT/bullmq-limiter.json" --slurpfile s "$OUT/sluice-precision.json" '
  ($b[0].dispatch) as $bd | ($s[0][] | select(.workload | startswith("a"))) as $a |
  ($a.dispatch) as $sd |
  "workload (a): 200 jobs at 10/s (ideal gap 100 ms; bound: 11 per 1 s window, 2 per 100 ms)",
  "| | BullMQ 6.7.0 limiter | sluice |", "| --- | --- | --- |",
  "| achieved rate (jobs/s) | \($bd.avg_rate_per_s) | \($sd.avg_rate_per_s) |",
  "| max in any sliding 1 s | \($bd.max_in_any_1000ms_sliding) | \($sd.max_in_any_1000ms_sliding) |",
  "| max in any sliding 100 ms | \($bd.max_in_any_100ms_sliding) | \($sd.max_in_any_100ms_sliding) |",
  "| same, on server release times (leased_at, ms) | – | \($a.release_time_windows.max_in_any_1000ms_sliding) / \($a.release_time_windows.max_in_any_100ms_sliding) |",
  "| gap min / p50 / p99 / max (ms) | \($bd.gap_ms.min) / \($bd.gap_ms.p50) / \($bd.gap_ms.p99) / \($bd.gap_ms.max) | \($sd.gap_ms.min) / \($sd.gap_ms.p50) / \($sd.gap_ms.p99) / \($sd.gap_ms.max) |"'
jq -r '.[] | select(.workload | startswith("b")) |
  "", "workload (b): \(.tenants) tenants at \(.rate_per_s_per_tenant)/s each, \(.jobs) jobs queued, \(.workers) workers (max_jobs \(.max_jobs_per_lease))",
  "released \(.jobs) jobs in \(.release_span_s) s: \(.achieved_total_rate_per_s)/s in all; per tenant min/median/max \(.per_tenant_rate_min_median_max)/s; all completed after \(.all_completed_after_s) s",
  "release times (server leased_at, ms): worst sliding 1 s \(.release_time_worst_max_in_any_1000ms_sliding), worst sliding 100 ms \(.release_time_worst_max_in_any_100ms_sliding), gap p99 (median tenant) \(.release_time_gap_ms_p99_median_over_tenants) ms",
  "receipt times (worker side): worst sliding 1 s \(.worst_max_in_any_1000ms_sliding) (bound \(.bound_1000ms)); worst sliding 100 ms \(.worst_max_in_any_100ms_sliding) (bound \(.bound_100ms))",
  "gap ms: min \(.gap_ms_min_over_tenants), p50 (median tenant) \(.gap_ms_p50_median_over_tenants), p99 (median tenant) \(.gap_ms_p99_median_over_tenants), p99 (worst tenant) \(.gap_ms_p99_worst_tenant), max \(.gap_ms_max_worst_tenant)",
  "intake while filling: \(.intake_jobs_per_s_while_filling) jobs/s"' "$OUT/sluice-precision.json"
