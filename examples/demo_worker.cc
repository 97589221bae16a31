// A small in-process worker for the demo: long-polls sluice for report-export jobs,
// "exports" each (simulated work proportional to the job's rows), completes it, and
// prints one line per job. The sluice-worker runtime (any command per job) comes later.
#include <CLI/CLI.hpp>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <thread>

#include "common/time.h"
#include "worker/client.h"

namespace {
std::atomic<bool> g_stop{false};
}

int main(int argc, char** argv) {
  std::string server, token, queue = "report-export", name = "worker";
  int ms_per_row = 20;
  CLI::App cli{"sluice demo worker"};
  cli.add_option("--server", server, "sluice URL, e.g. http://127.0.0.1:8080")->required();
  cli.add_option("--token", token, "a work-scoped token")->required();
  cli.add_option("--queue", queue, "queue to work on");
  cli.add_option("--name", name, "worker name shown in the output");
  cli.add_option("--ms-per-row", ms_per_row, "simulated work per report row");
  CLI11_PARSE(cli, argc, argv);

  std::signal(SIGINT, [](int) { g_stop = true; });
  std::signal(SIGTERM, [](int) { g_stop = true; });

  sluice::WorkerClient client(server, token, name);
  while (!g_stop) {
    auto jobs = client.Lease({queue}, 1, 2000);
    if (!jobs.ok()) {
      std::fprintf(stderr, "[%s] lease failed: %s\n", name.c_str(), jobs.error().detail.c_str());
      std::this_thread::sleep_for(std::chrono::seconds(1));  // the server is down: back off
      continue;
    }
    for (const sluice::LeasedJob& job : jobs.value()) {
      int rows = job.payload.is_object() ? job.payload.value("rows", 10) : 10;
      std::string at = sluice::FormatRfc3339(sluice::WallNowMicros()).substr(11, 12);
      std::printf("%s  [%s] start  %-8s %s (%d rows, attempt %lld)\n", at.c_str(), name.c_str(),
                  job.tenant.c_str(), job.id.c_str(), rows, static_cast<long long>(job.attempt));
      std::fflush(stdout);
      std::this_thread::sleep_for(std::chrono::milliseconds(rows * ms_per_row));  // the "export"
      auto done = client.Complete(job, {{"rows_written", rows}});
      if (!done.ok()) {
        std::fprintf(stderr, "[%s] complete %s failed: %s\n", name.c_str(), job.id.c_str(),
                     done.error().detail.c_str());
      }
    }
  }
  return 0;
}
