// The README's first steps, run literally (issue 19): the shell block of "Running
// sluiced" starts the server, and the block of "Using it" drives it with curl and jq, as
// a newcomer would type them. Only the port, the database file and the binary's path are
// the test's own, so the walkthrough cannot rot without this test failing.
#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <regex>
#include <string>

#include "tests/testutil/subprocess.h"
#include "tests/testutil/temp_dir.h"

namespace sluice::testing {
namespace {

// The first ```sh block after `heading` in `text`.
std::string ShellBlockAfter(const std::string& text, const std::string& heading) {
  const size_t at = text.find("\n" + heading + "\n");
  if (at == std::string::npos) throw std::runtime_error("README has no " + heading);
  const std::string open = "```sh\n";
  const size_t begin = text.find(open, at);
  if (begin == std::string::npos) throw std::runtime_error("no sh block after " + heading);
  const size_t end = text.find("```", begin + open.size());
  return text.substr(begin + open.size(), end - begin - open.size());
}

std::string ReplaceAll(std::string text, const std::string& from, const std::string& to) {
  size_t count = 0;
  for (size_t at = 0; (at = text.find(from, at)) != std::string::npos; at += to.size()) {
    text.replace(at, from.size(), to);
    ++count;
  }
  if (count == 0) throw std::runtime_error("not in the README's block: " + from);
  return text;
}

TEST_CASE("readme: the walkthrough's shell blocks run as written") {
  const std::string readme = ReadFile(std::string(SLUICE_SOURCE_DIR) + "/README.md");
  std::string start = ShellBlockAfter(readme, "## Running sluiced");
  std::string use = ShellBlockAfter(readme, "## Using it");
  TempDir dir;
  const std::string port = std::to_string(FreeLoopbackPort());

  // The server line runs in the background here (a newcomer keeps it in its own shell).
  REQUIRE(start.find("build/server/sluiced ") != std::string::npos);
  start = ReplaceAll(start, "build/server/sluiced ", std::string(SLUICED_BINARY) + " ");
  start = ReplaceAll(start, "--listen 127.0.0.1:8080", "--listen 127.0.0.1:" + port);
  start = ReplaceAll(start, "--db ./sluice.db", "--db " + dir.File("sluice.db"));
  start = std::regex_replace(start, std::regex("(\n[^\n]*--config[^\n]*)\n"),
                             "$1 > " + dir.File("sluiced.log") + " 2>&1 &\nSLUICED=$!\n");
  use = ReplaceAll(use, "localhost:8080", "127.0.0.1:" + port);

  const std::string script = dir.File("walkthrough.sh");
  std::ofstream(script) << "set -euo pipefail\n"
                        << "trap 'kill $SLUICED 2>/dev/null || true' EXIT\n"
                        << "cd " << SLUICE_SOURCE_DIR << "\n"
                        << start
                        // Awaited with a deadline (50 ms polls, at most 20 s).
                        << "for i in $(seq 400); do curl -sf 127.0.0.1:" << port
                        << "/healthz >/dev/null && break; sleep 0.05; done\n"
                        << use;
  Subprocess run({"bash", script}, {"SLUICE_ADMIN_TOKEN"},
                 Streams{"/dev/null", dir.File("out.txt"), dir.File("err.txt")});
  auto status = run.Wait(std::chrono::seconds(120));
  const std::string out = ReadFile(dir.File("out.txt"));
  INFO("script:\n"
       << ReadFile(script) << "\nstdout:\n"
       << out << "\nstderr:\n"
       << ReadFile(dir.File("err.txt")) << "\nsluiced:\n"
       << ReadFile(dir.File("sluiced.log")));
  REQUIRE(status);
  CHECK(*status == 0);
  // What each step printed: the refusal of the file's queue, the 202 with its Location,
  // the second job queued, the completion and the batch ack.
  CHECK(out.find("managed_by_config\n") != std::string::npos);
  CHECK(out.find("HTTP/1.1 202 Accepted") != std::string::npos);
  CHECK(std::regex_search(out, std::regex("[Ll]ocation: /v1/jobs/job_[0-9a-f]+")));
  CHECK(std::regex_search(out, std::regex("\njob_[0-9a-f]+ queued\n")));
  CHECK(out.find("\nsucceeded\n") != std::string::npos);
  CHECK(std::regex_search(
      out, std::regex(R"(\{"results":\[\{"id":"job_[0-9a-f]+","state":"succeeded"\}\]\})")));
}

}  // namespace
}  // namespace sluice::testing
