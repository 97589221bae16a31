// sluiced at its file-descriptor limit (issue 14): started under `prlimit --nofile=128`
// with a --max-connections above what the descriptors allow, it is filled with open
// keep-alive connections, then
//   (a) idle with one more connection waiting in the listen backlog: server CPU;
//   (b) flooded with new connections from another thread: how they are answered, the
//       latency of /healthz on a connection already open, and server CPU.
// Before the fix the accept loop spun at ~70% CPU in (a) and /healthz took 2.5 s.
// Prints JSON.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "bench/proc_stats.h"
#include "tests/testutil/raw_http.h"
#include "tests/testutil/server_process.h"

using nlohmann::json;
using sluice::testing::BuildRequest;
using sluice::testing::RawExchange;
using sluice::testing::ServerOptions;
using sluice::testing::ServerProcess;
using SteadyClock = std::chrono::steady_clock;

namespace {

using sluice::bench::CpuSeconds;

double Pct(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

}  // namespace

int main() {
  ServerOptions options;
  options.extra_args = {"--max-connections", "1000", "--no-access-log"};
  options.command_prefix = {"prlimit", "--nofile=128:128", "--"};
  ServerProcess server(options);

  std::vector<std::unique_ptr<httplib::Client>> open;
  for (int i = 0; i < 200; ++i) {
    auto c = server.Client();
    c->set_read_timeout(5, 0);
    auto res = c->Get("/healthz");
    if (res && res->status == 200) open.push_back(std::move(c));
  }

  // (a) one connection waits in the backlog, never sending anything.
  int waiting = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(server.port()));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::connect(waiting, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  double cpu0 = CpuSeconds(server.pid());
  std::this_thread::sleep_for(std::chrono::seconds(3));  // a measurement window
  double idle_cpu = (CpuSeconds(server.pid()) - cpu0) / 3.0;
  ::close(waiting);

  // (b) a flood of new connections while /healthz is timed on an open one.
  std::atomic<bool> stop{false};
  std::map<int, int> flood_statuses;
  std::thread flood([&] {
    while (!stop)
      ++flood_statuses[RawExchange(server.port(), BuildRequest("GET", "/healthz")).status];
  });
  cpu0 = CpuSeconds(server.pid());
  auto t0 = SteadyClock::now();
  std::vector<double> healthz_ms;
  while (SteadyClock::now() - t0 < std::chrono::seconds(5)) {
    auto s = SteadyClock::now();
    auto res = open[healthz_ms.size() % open.size()]->Get("/healthz");
    if (!res || res->status != 200) break;
    healthz_ms.push_back(std::chrono::duration<double, std::milli>(SteadyClock::now() - s).count());
  }
  double flood_cpu = (CpuSeconds(server.pid()) - cpu0) /
                     std::chrono::duration<double>(SteadyClock::now() - t0).count();
  stop = true;
  flood.join();

  json statuses = json::object();
  for (auto [status, n] : flood_statuses) statuses[std::to_string(status)] = n;
  json out = {{"open_connections_served", open.size()},
              {"idle_with_backlog_server_cpu", idle_cpu},
              {"flood_answers_by_status", statuses},
              {"flood_server_cpu", flood_cpu},
              {"healthz_on_open_connection_ms",
               {{"n", healthz_ms.size()},
                {"p50", Pct(healthz_ms, 0.5)},
                {"p99", Pct(healthz_ms, 0.99)},
                {"max", Pct(healthz_ms, 1.0)}}}};
  std::printf("%s\n", out.dump(2).c_str());
  return 0;
}
