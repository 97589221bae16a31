// The job handler of the sluice-worker runtime: runs the configured command once per
// job (payload JSON on stdin, SLUICE_* in its environment) and turns how it ended into
// a JobOutcome. The contract is written down in docs/workers.md. Thread-safe.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "worker/child_process.h"
#include "worker/worker.h"

namespace sluice {

inline constexpr int kExitTempFail = 75;  // EX_TEMPFAIL: retry (maybe after retry_in_ms)
inline constexpr int kExitDataErr = 65;   // EX_DATAERR: the payload is bad, do not retry

struct CommandOptions {
  std::vector<std::string> argv;
  std::chrono::milliseconds kill_grace{5000};
  size_t max_result_bytes = 512 * 1024;  // a larger stdout is not sent as the result
};

// The command's environment: ours without SLUICE_TOKEN (the worker's secret) and any
// SLUICE_* of our own, plus SLUICE_JOB_ID, SLUICE_QUEUE, SLUICE_TENANT, SLUICE_ATTEMPT,
// SLUICE_DEADLINE (empty when the job has none) and TRACEPARENT when the job has one.
std::vector<std::string> CommandEnvironment(const LeasedJob& job,
                                            const std::vector<std::string>& base);

// How the command ended → what to tell sluice. Pure.
//   exit 0  → complete; result = stdout as JSON (empty → null; not JSON → a string;
//             over max_result_bytes → null)
//   exit 75 → retryable fail; retry_in_ms from a JSON object on stdout, if any
//   exit 65 → fail, not retryable
//   else    → retryable fail (exit code or signal, then the tail of stderr)
JobOutcome OutcomeOf(const ChildResult& r, size_t max_result_bytes);

// Runs the command for the job in `ctx`; terminates it when ctx is cancelled.
JobOutcome RunCommandJob(const CommandOptions& options, JobContext& ctx);

}  // namespace sluice
