// The access line (server/log.h LogRequest): written straight to the log's buffer in the
// text format, so it must read exactly as a line spdlog formats for LogEvent would.
#include <fcntl.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "server/log.h"
#include "tests/testutil/temp_dir.h"

namespace sluice {
namespace {

// Runs `fn` with the process's stderr going to a file, and returns the file's lines.
template <typename Fn>
std::vector<std::string> StderrLines(const std::string& path, Fn fn) {
  const int saved = ::dup(STDERR_FILENO);
  REQUIRE(saved >= 0);
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  REQUIRE(fd >= 0);
  ::dup2(fd, STDERR_FILENO);
  ::close(fd);
  auto previous = spdlog::default_logger();
  fn();
  spdlog::default_logger()->flush();
  spdlog::set_default_logger(previous);
  ::dup2(saved, STDERR_FILENO);
  ::close(saved);
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

TEST_CASE("access line: the logger's prefix, every field in order, values quoted as logfmt",
          "[log]") {
  testing::TempDir dir;
  const auto lines = StderrLines(dir.File("stderr"), [] {
    ConfigureLogging(LogFormat::kText, "inst1");
    LogEvent(spdlog::level::info, "started", {{"port", 8080}});
    LogRequest("rid-1", "POST", "/v1/queues/a b/jobs", 202, 12.0, "10.0.0.9", "203.0.113.7");
    LogRequest("rid-2", "GET", "/v1/jobs/\"x\"", 404, 0.0306, "10.0.0.9", "10.0.0.9");
    LogRequest("rid-3", "GET", "/healthz", 200, 3.05, "10.0.0.9", "10.0.0.9");
  });
  REQUIRE(lines.size() == 4);
  const std::regex prefix(R"(^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z info )");
  for (const std::string& line : lines) CHECK(std::regex_search(line, prefix));
  CHECK(lines[0].substr(30) == "started instance=inst1 port=8080");
  CHECK(lines[1].substr(30) ==
        "request instance=inst1 client_ip=203.0.113.7 duration_ms=12 method=POST "
        "path=\"/v1/queues/a b/jobs\" remote=10.0.0.9 request_id=rid-1 status=202");
  CHECK(lines[2].substr(30) ==
        "request instance=inst1 client_ip=10.0.0.9 duration_ms=0.031 method=GET "
        "path=\"/v1/jobs/\\\"x\\\"\" remote=10.0.0.9 request_id=rid-2 status=404");
  CHECK(lines[3].find(" duration_ms=3.05 ") != std::string::npos);
}

TEST_CASE("access line: through another default logger once one replaced sluice's", "[log]") {
  testing::TempDir dir;
  std::ostringstream seen;
  const auto lines = StderrLines(dir.File("stderr"), [&] {
    ConfigureLogging(LogFormat::kText, "inst2");
    auto mine = spdlog::default_logger();
    auto other = std::make_shared<spdlog::logger>(
        "other", std::make_shared<spdlog::sinks::ostream_sink_mt>(seen));
    other->set_pattern("%v");
    spdlog::set_default_logger(other);
    LogRequest("rid-9", "GET", "/healthz", 200, 1.5, "127.0.0.1", "127.0.0.1");
    other->flush();
    mine->flush();  // a line wrongly written to sluice's buffer would reach the file now
  });
  CHECK(lines.empty());
  CHECK(seen.str() ==
        "request instance=inst2 client_ip=127.0.0.1 duration_ms=1.5 method=GET path=/healthz "
        "remote=127.0.0.1 request_id=rid-9 status=200\n");
}

}  // namespace
}  // namespace sluice
