// Starts a program (a real binary or a script) for a system test, its stdout and stderr
// appended to one log file, and stops it (SIGKILL) when the object dies unless it was
// awaited. Eventually() polls a condition with a deadline: tests await, never sleep.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace sluice::testing {

// Where a Subprocess's standard streams go, when not to one log.
struct Streams {
  std::string stdin_path = "/dev/null";
  std::string stdout_path;  // created
  std::string stderr_path;  // created
};

class Subprocess {
 public:
  // `env` entries ("NAME=value") are added to (or replace) this process's environment;
  // an entry "NAME" (no '=') removes NAME from it.
  Subprocess(std::vector<std::string> argv, std::vector<std::string> env, std::string log_path);
  // The same with stdin read from a file and stdout and stderr kept apart (ReadLog()
  // reads stdout).
  Subprocess(std::vector<std::string> argv, std::vector<std::string> env, const Streams& streams);
  ~Subprocess();
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;

  pid_t pid() const { return pid_; }
  void Signal(int signo) const;
  // The exit status (or -signal) once it exits within `timeout`; nullopt if it did not.
  std::optional<int> Wait(std::chrono::milliseconds timeout);
  std::string ReadLog() const;

 private:
  void Spawn(std::vector<std::string> argv, const std::vector<std::string>& env,
             const Streams& streams);

  pid_t pid_ = -1;
  std::string log_path_;
  std::optional<int> status_;
};

// A loopback TCP port nobody listened on a moment ago (for a server that takes its port
// on the command line). Throws std::runtime_error if none can be had.
int FreeLoopbackPort();

// Polls `ready` every few milliseconds until it holds or `timeout` passes.
bool Eventually(const std::function<bool()>& ready, std::chrono::milliseconds timeout);

}  // namespace sluice::testing
