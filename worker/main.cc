// sluice-worker: runs a command once per job leased from sluice (docs/workers.md).
//   sluice-worker --server URL --queue Q [--queue Q2] --concurrency N [--lease-ms M] -- CMD ARGS...
// The token comes from --token or, better (it is not visible in ps), SLUICE_TOKEN.
// SIGTERM/SIGINT: stop leasing, let running commands finish within --drain-ms, fail the
// rest back as retryable, exit 0. A second signal skips the rest of the drain.
#include <signal.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>

#include "client/server_flag.h"
#include "worker/command_job.h"
#include "worker/signals.h"
#include "worker/worker.h"

int main(int argc, char** argv) {
  sluice::WorkerOptions options;
  sluice::CommandOptions command;
  options.wait_ms = 10000;  // also the longest a SIGTERM waits for the poll in flight
  int64_t drain_ms = 30000, kill_grace_ms = 5000;
  std::optional<int64_t> lease_ms, timeout_ms;
  CLI::App cli{"sluice-worker: runs CMD once per job leased from sluice"};
  sluice::AddServerFlag(cli, options.server, "sluice URL, e.g. http://127.0.0.1:8080")
      ->required()
      ->envname("SLUICE_SERVER");
  cli.add_option("--token", options.token, "work-scoped token (prefer the env variable)")
      ->envname("SLUICE_TOKEN");
  cli.add_option("--queue", options.queues, "queue to work on (repeat for more)")->required();
  cli.add_option("--concurrency", options.concurrency, "commands run at once")
      ->check(CLI::Range(1, 1000));
  cli.add_option("--lease-ms", lease_ms, "lease length to ask for (default: the queue's)")
      ->check(CLI::Range(int64_t{100}, int64_t{86400000}));
  cli.add_option("--timeout-ms", timeout_ms,
                 "stop extending a job's lease this long after it started; the command is "
                 "then killed when the lease runs out")
      ->check(CLI::Range(int64_t{100}, int64_t{86400000}));
  cli.add_option("--wait-ms", options.wait_ms, "long-poll length (jittered over [w/2, w])")
      ->check(CLI::Range(int64_t{0}, int64_t{600000}));
  cli.add_option("--drain-ms", drain_ms, "on SIGTERM, how long running commands may finish");
  cli.add_option("--kill-grace-ms", kill_grace_ms, "SIGTERM to SIGKILL of a command");
  cli.add_option("--max-result-bytes", command.max_result_bytes,
                 "largest stdout sent as the job's result");
  cli.add_option("--worker-id", options.worker_id, "name in the server's records and logs");
  cli.add_option("command", command.argv, "CMD ARGS... (after --)")->required();
  CLI11_PARSE(cli, argc, argv);
  if (options.token.empty()) {
    std::fprintf(stderr, "a token is required: set SLUICE_TOKEN (or --token)\n");
    return 2;
  }
  options.lease_ms = lease_ms;
  options.timeout_ms = timeout_ms;
  options.drain_grace = std::chrono::milliseconds(drain_ms);
  command.kill_grace = std::chrono::milliseconds(kill_grace_ms);

  auto logger = spdlog::stderr_logger_mt("sluice-worker");
  logger->set_pattern("%Y-%m-%dT%H:%M:%S.%eZ %l %v", spdlog::pattern_time_type::utc);
  logger->flush_on(spdlog::level::info);
  spdlog::set_default_logger(logger);

  // Signals are taken by one thread (worker/signals.h). A closed pipe is an error
  // return, not a death.
  sluice::BlockStopSignals();
  signal(SIGPIPE, SIG_IGN);

  sluice::Worker worker(
      options, [&command](sluice::JobContext& ctx) { return sluice::RunCommandJob(command, ctx); });
  sluice::Status status = sluice::RunUntilSignalled(worker, [&](int signo, int nth) {
    if (nth == 1) {
      spdlog::info("signal {}: draining (running commands get {} ms)", strsignal(signo), drain_ms);
      worker.Stop();
    } else {
      spdlog::info("signal {} again: stopping running commands now", strsignal(signo));
      worker.Abort();
    }
  });
  if (!status.ok()) {
    spdlog::error("{}", status.error().detail);
    return 1;
  }
  return 0;
}
