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

class Subprocess {
 public:
  // `env` entries ("NAME=value") are added to (or replace) this process's environment.
  Subprocess(std::vector<std::string> argv, std::vector<std::string> env, std::string log_path);
  ~Subprocess();
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;

  pid_t pid() const { return pid_; }
  void Signal(int signo) const;
  // The exit status (or -signal) once it exits within `timeout`; nullopt if it did not.
  std::optional<int> Wait(std::chrono::milliseconds timeout);
  std::string ReadLog() const;

 private:
  pid_t pid_ = -1;
  std::string log_path_;
  std::optional<int> status_;
};

// Polls `ready` every few milliseconds until it holds or `timeout` passes.
bool Eventually(const std::function<bool()>& ready, std::chrono::milliseconds timeout);

}  // namespace sluice::testing
