// Runs one command as a child process in a process group of its own: writes its stdin,
// collects its stdout (bounded) and the tail of its stderr, and waits for it to exit or
// for a cancel descriptor to become readable, then terminates the group (SIGTERM, and
// SIGKILL after a grace period). Event-driven (poll on pipes, a pidfd and the cancel
// fd); no busy waiting. Thread-safe: each call owns its descriptors, all O_CLOEXEC.
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace sluice {

struct ChildSpec {
  std::vector<std::string> argv;  // argv[0] is looked up in PATH
  std::vector<std::string> env;   // the whole environment, "NAME=value"
  std::string stdin_data;
  size_t max_stdout_bytes = 1 << 20;           // more is read and dropped (stdout_truncated)
  size_t stderr_tail_bytes = 2048;             // the last bytes of stderr are kept
  std::chrono::milliseconds kill_grace{5000};  // SIGTERM → SIGKILL
};

struct ChildResult {
  bool spawned = false;
  std::string spawn_error;  // when !spawned
  bool exited = false;      // exited on its own with exit_code
  int exit_code = -1;
  int term_signal = 0;     // when killed by a signal
  bool cancelled = false;  // the cancel fd fired and the group was signalled
  std::string stdout_data;
  bool stdout_truncated = false;
  std::string stderr_tail;
};

// Runs `spec` to the end. `cancel_fd` (or -1) becomes readable to ask for termination.
// Whatever the command leaves running in its process group is killed when it exits.
ChildResult RunChild(const ChildSpec& spec, int cancel_fd);

}  // namespace sluice
