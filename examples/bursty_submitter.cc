// The demo's bursty client: every few seconds, each tenant fires a burst of report
// exports as fast as it can. sluice admits what fits in the tenant's bucket and
// answers the rest 429 with an honest Retry-After; this client prints both.
#include <httplib.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "common/time.h"

int main(int argc, char** argv) {
  std::string server, queue = "report-export";
  std::vector<std::string> tenant_tokens;  // tenant=token
  int bursts = 3, burst_size = 12, interval_ms = 5000;
  CLI::App cli{"sluice demo: bursty submitter"};
  cli.add_option("--server", server, "sluice URL")->required();
  cli.add_option("--queue", queue, "queue to submit to");
  cli.add_option("--tenant", tenant_tokens, "tenant=token (repeat)")->required();
  cli.add_option("--bursts", bursts, "how many bursts");
  cli.add_option("--burst-size", burst_size, "jobs per tenant per burst");
  cli.add_option("--interval-ms", interval_ms, "time between bursts");
  CLI11_PARSE(cli, argc, argv);

  std::mt19937 rng(42);
  for (int burst = 1; burst <= bursts; ++burst) {
    for (const std::string& tt : tenant_tokens) {
      const std::string tenant = tt.substr(0, tt.find('='));
      const std::string token = tt.substr(tt.find('=') + 1);
      httplib::Client c(server);
      c.set_tcp_nodelay(true);
      c.set_keep_alive(true);
      c.set_bearer_token_auth(token.c_str());
      int accepted = 0, rejected = 0;
      std::string retry_after, last_start;
      for (int i = 0; i < burst_size; ++i) {
        nlohmann::json body = {
            {"payload", {{"rows", 5 + static_cast<int>(rng() % 20)}, {"report", "monthly-usage"}}}};
        auto res =
            c.Post(("/v1/queues/" + queue + "/jobs").c_str(), body.dump(), "application/json");
        if (!res) {
          std::fprintf(stderr, "submit failed: %s\n", httplib::to_string(res.error()).c_str());
          return 1;
        }
        if (res->status == 202) {
          ++accepted;
          last_start = nlohmann::json::parse(res->body).value("estimated_start", "");
        } else if (res->status == 429) {
          ++rejected;
          retry_after = res->get_header_value("Retry-After");
        } else {
          std::fprintf(stderr, "unexpected %d: %s\n", res->status, res->body.c_str());
          return 1;
        }
      }
      std::string at = sluice::FormatRfc3339(sluice::WallNowMicros()).substr(11, 12);
      std::printf("%s  [submitter] burst %d: %-8s %2d accepted", at.c_str(), burst, tenant.c_str(),
                  accepted);
      if (accepted > 0) std::printf(" (last starts ~%s)", last_start.substr(11, 8).c_str());
      if (rejected > 0)
        std::printf(", %2d refused 429 (Retry-After %ss)", rejected, retry_after.c_str());
      std::printf("\n");
      std::fflush(stdout);
    }
    if (burst < bursts) std::this_thread::sleep_for(std::chrono::milliseconds(interval_ms));
  }
  return 0;
}
