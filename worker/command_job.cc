#include "worker/command_job.h"

#include <signal.h>
#include <string.h>

#include <algorithm>

extern char** environ;

namespace sluice {
namespace {

using nlohmann::json;

std::string Trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

// "exit 3" / "killed by SIGKILL", then ": <stderr tail>" when there is one.
std::string Describe(const ChildResult& r) {
  std::string what =
      r.exited ? "exit " + std::to_string(r.exit_code)
               : "killed by signal " + std::to_string(r.term_signal) + " (" +
                     (sigdescr_np(r.term_signal) ? sigdescr_np(r.term_signal) : "?") + ")";
  std::string tail = Trim(r.stderr_tail);
  return tail.empty() ? what : what + ": " + tail;
}

}  // namespace

std::vector<std::string> CommandEnvironment(const LeasedJob& job,
                                            const std::vector<std::string>& base) {
  std::vector<std::string> env;
  for (const std::string& e : base) {
    if (e.rfind("SLUICE_", 0) == 0 || e.rfind("TRACEPARENT=", 0) == 0) continue;
    env.push_back(e);
  }
  env.push_back("SLUICE_JOB_ID=" + job.id);
  env.push_back("SLUICE_QUEUE=" + job.queue);
  env.push_back("SLUICE_TENANT=" + job.tenant);
  env.push_back("SLUICE_ATTEMPT=" + std::to_string(job.attempt));
  env.push_back("SLUICE_DEADLINE=" + job.deadline.value_or(""));
  if (job.traceparent) env.push_back("TRACEPARENT=" + *job.traceparent);
  return env;
}

JobOutcome OutcomeOf(const ChildResult& r, size_t max_result_bytes) {
  if (!r.spawned) return JobOutcome::Fail(r.spawn_error);
  const std::string out = Trim(r.stdout_data);
  if (r.exited && r.exit_code == 0) {
    if (out.empty() || r.stdout_truncated || out.size() > max_result_bytes) {
      return JobOutcome::Complete(nullptr);
    }
    json j = json::parse(out, nullptr, false);
    return JobOutcome::Complete(j.is_discarded() ? json(out) : j);
  }
  if (r.exited && r.exit_code == kExitTempFail) {
    std::optional<int64_t> retry_in;
    json j = json::parse(out, nullptr, false);
    if (j.is_object() && j.contains("retry_in_ms") && j["retry_in_ms"].is_number_integer() &&
        j["retry_in_ms"].get<int64_t>() >= 0) {
      retry_in = j["retry_in_ms"].get<int64_t>();
    }
    return JobOutcome::Fail(Describe(r), true, retry_in);
  }
  if (r.exited && r.exit_code == kExitDataErr) return JobOutcome::Fail(Describe(r), false);
  return JobOutcome::Fail(Describe(r));
}

JobOutcome RunCommandJob(const CommandOptions& options, JobContext& ctx) {
  std::vector<std::string> base;
  for (char** e = environ; *e; ++e) base.emplace_back(*e);
  ChildSpec spec;
  spec.argv = options.argv;
  spec.env = CommandEnvironment(ctx.job(), base);
  spec.stdin_data = ctx.job().payload.dump(-1, ' ', false, json::error_handler_t::replace);
  spec.max_stdout_bytes = options.max_result_bytes + 1;  // one more byte: "too large"
  spec.kill_grace = options.kill_grace;
  if (ctx.cancelled()) {  // cancelled before it started (shutdown): do not start it
    return JobOutcome::Fail("worker shutting down before the command started", true, 0);
  }
  ChildResult r = RunChild(spec, ctx.cancel_fd());
  if (r.cancelled && !(r.exited && r.exit_code == 0)) {
    // We stopped it: for a shutdown the job goes back at once; for a lost lease the
    // outcome is not sent at all (worker.h).
    return JobOutcome::Fail(
        "stopped (" + std::string(StopReasonName(ctx.reason())) + "), " + Describe(r), true, 0);
  }
  return OutcomeOf(r, options.max_result_bytes);
}

}  // namespace sluice
