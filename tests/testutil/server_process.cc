#include "tests/testutil/server_process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "tests/testutil/test_db.h"

extern char** environ;

namespace sluice::testing {
namespace {

using Clock = std::chrono::steady_clock;

// Polls `ready` every few milliseconds until it holds or `timeout` passes.
template <typename F>
bool PollUntil(F ready, std::chrono::milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline) {
    if (ready()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return ready();
}

}  // namespace

ServerProcess::ServerProcess(ServerOptions options) : options_(std::move(options)) {
  db_path_ = options_.db_path.empty() ? TestDb(dir_, "sluice.db") : options_.db_path;
  log_path_ = options_.log_path.empty() ? dir_.File("sluiced.log") : options_.log_path;
  const std::string port_file = dir_.File("port");

  std::vector<std::string> args = options_.command_prefix;
  const std::string listen = "127.0.0.1:" + std::to_string(options_.port);
  for (const char* a : {SLUICED_BINARY, "--listen", listen.c_str(), "--db"}) args.emplace_back(a);
  for (const std::string& a : {db_path_, std::string("--port-file"), port_file}) args.push_back(a);
  for (const auto& a : options_.extra_args) args.push_back(a);
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  std::vector<std::string> extra_env = options_.env;
  extra_env.push_back("SLUICE_ADMIN_TOKEN=" + options_.admin_token);
  auto replaced = [&](const std::string& entry) {
    for (const auto& x : extra_env) {
      const std::string name = x.substr(0, x.find('=') + 1);
      if (entry.rfind(name, 0) == 0) return true;
    }
    return false;
  };
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e) {
    if (!replaced(*e)) env_strings.emplace_back(*e);
  }
  for (const auto& x : extra_env) env_strings.push_back(x);
  std::vector<char*> envp;
  for (auto& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log_path_.c_str(), O_WRONLY | O_CREAT | O_APPEND,
                                   0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  int rc = posix_spawnp(&pid_, argv[0], &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) throw std::runtime_error("cannot spawn " + std::string(SLUICED_BINARY));

  bool up = PollUntil(
      [&] {
        std::ifstream in(port_file);
        return static_cast<bool>(in >> port_) && port_ > 0;
      },
      std::chrono::seconds(20));
  if (!up) {
    Stop(SIGKILL);
    throw std::runtime_error("sluiced did not start; log:\n" + ReadLog());
  }
  auto c = Client();
  bool healthy = PollUntil(
      [&] {
        auto res = c->Get("/healthz");
        return res && res->status == 200;
      },
      std::chrono::seconds(20));
  if (!healthy) throw std::runtime_error("sluiced is not healthy; log:\n" + ReadLog());
}

ServerProcess::~ServerProcess() {
  if (pid_ > 0) Stop(SIGTERM);
}

std::string ServerProcess::ReadLog() const {
  std::ifstream in(log_path_);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::unique_ptr<httplib::Client> ServerProcess::Client(const std::string& token) const {
  auto c = std::make_unique<httplib::Client>("127.0.0.1", port_);
  c->set_tcp_nodelay(true);
  c->set_keep_alive(true);
  c->set_read_timeout(60, 0);
  if (!token.empty()) c->set_bearer_token_auth(token.c_str());
  return c;
}

int ServerProcess::Stop(int signo) {
  if (pid_ <= 0) return 0;
  kill(pid_, signo);
  int status = 0;
  bool exited =
      PollUntil([&] { return waitpid(pid_, &status, WNOHANG) == pid_; }, std::chrono::seconds(20));
  if (!exited) {
    kill(pid_, SIGKILL);
    waitpid(pid_, &status, 0);
  }
  pid_ = -1;
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return -WTERMSIG(status);
  return -1;
}

std::string HttpResult::header(const std::string& name) const {
  auto it = headers.find(name);
  return it == headers.end() ? "" : it->second;
}

HttpResult Call(httplib::Client& c, const std::string& method, const std::string& path,
                const nlohmann::json& body, const httplib::Headers& headers) {
  std::string text = body.is_null() ? "" : body.dump();
  httplib::Result res(nullptr, httplib::Error::Unknown);
  if (method == "GET") {
    res = c.Get(path.c_str(), headers);
  } else if (method == "POST") {
    res = c.Post(path.c_str(), headers, text, "application/json");
  } else if (method == "PUT") {
    res = c.Put(path.c_str(), headers, text, "application/json");
  } else if (method == "DELETE") {
    res = c.Delete(path.c_str(), headers);
  }
  if (!res) throw std::runtime_error(method + " " + path + ": " + httplib::to_string(res.error()));
  HttpResult out;
  out.status = res->status;
  out.headers = res->headers;
  out.body = nlohmann::json::parse(res->body, nullptr, false);
  if (out.body.is_discarded()) out.body = res->body;
  // Every error is problem+json: checked here for every call a test makes.
  if (res->status >= 400) {
    std::string ct = res->get_header_value("Content-Type");
    if (ct != "application/problem+json" || !out.body.is_object() || !out.body.contains("error")) {
      throw std::runtime_error(method + " " + path + " answered " + std::to_string(res->status) +
                               " without a problem+json body: " + res->body);
    }
  }
  return out;
}

std::vector<std::string> FaketimeEnv(const std::string& offset) {
  // Only the wall clock: skew between hosts is a matter of CLOCK_REALTIME (monotonic
  // clocks have no common epoch), and libfaketime 0.9.10 faking CLOCK_MONOTONIC breaks
  // timed waits (a condition_variable::wait_for of 100 ms under +7s never returned).
  // Behind only: under a positive offset libfaketime 0.9.10 also shifts the absolute
  // deadline Boost.Asio gives its timerfd for a timer already due (1 ns becomes -7 s,
  // EINVAL), so that timer never fires (a 20-line Asio program hung under +7s, ran under
  // -5s): an instance "ahead" stalled now and then for the tool's sake, not sluice's.
  if (offset.empty() || offset[0] != '-') {
    throw std::invalid_argument("FaketimeEnv: only offsets behind (\"-Ns\"), not " + offset);
  }
  return {"LD_PRELOAD=/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1", "FAKETIME=" + offset,
          "FAKETIME_DONT_FAKE_MONOTONIC=1"};
}

httplib::Headers Bearer(const std::string& token, httplib::Headers extra) {
  extra.emplace("Authorization", "Bearer " + token);
  return extra;
}

}  // namespace sluice::testing
