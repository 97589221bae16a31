#include "tests/testutil/subprocess.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace sluice::testing {

int FreeLoopbackPort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw std::runtime_error("FreeLoopbackPort: socket() failed");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  close(fd);
  if (port == 0) throw std::runtime_error("FreeLoopbackPort: no free loopback port");
  return port;
}

bool Eventually(const std::function<bool()>& ready, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (ready()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return ready();
}

Subprocess::Subprocess(std::vector<std::string> argv, std::vector<std::string> env,
                       std::string log_path)
    : log_path_(std::move(log_path)) {
  Spawn(std::move(argv), env, Streams{"/dev/null", log_path_, ""});  // stderr: as stdout
}

Subprocess::Subprocess(std::vector<std::string> argv, std::vector<std::string> env,
                       const Streams& streams)
    : log_path_(streams.stdout_path) {
  Spawn(std::move(argv), env, streams);
}

void Subprocess::Spawn(std::vector<std::string> argv, const std::vector<std::string>& env,
                       const Streams& streams) {
  auto name = [](const std::string& s) { return s.substr(0, s.find('=')); };
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e) {
    std::string s(*e);
    bool replaced = false;
    for (const std::string& add : env) replaced = replaced || name(s) == name(add);
    if (!replaced) env_strings.push_back(s);
  }
  for (const std::string& add : env) {
    if (add.find('=') != std::string::npos) env_strings.push_back(add);
  }
  std::vector<char*> args, envp;
  for (auto& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  for (auto& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, streams.stdin_path.c_str(), O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, streams.stdout_path.c_str(),
                                   O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (streams.stderr_path.empty()) {
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
  } else {
    posix_spawn_file_actions_addopen(&actions, 2, streams.stderr_path.c_str(),
                                     O_WRONLY | O_CREAT | O_APPEND, 0644);
  }
  int rc = posix_spawnp(&pid_, args[0], &actions, nullptr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) throw std::runtime_error("cannot spawn " + argv[0]);
}

Subprocess::~Subprocess() {
  if (!status_ && pid_ > 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
}

void Subprocess::Signal(int signo) const {
  if (!status_) kill(pid_, signo);
}

std::optional<int> Subprocess::Wait(std::chrono::milliseconds timeout) {
  if (status_) return status_;
  int status = 0;
  if (!Eventually([&] { return waitpid(pid_, &status, WNOHANG) == pid_; }, timeout)) {
    return std::nullopt;
  }
  status_ = WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
  return status_;
}

std::string Subprocess::ReadLog() const {
  std::ifstream in(log_path_);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace sluice::testing
