#include "worker/child_process.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>

#include "worker/unique_fd.h"

namespace sluice {
namespace {

using Clock = std::chrono::steady_clock;

struct Pipe {
  UniqueFd read, write;
};

bool MakePipe(Pipe& p) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return false;
  p.read = UniqueFd(fds[0]);
  p.write = UniqueFd(fds[1]);
  return true;
}

void SetNonBlocking(int fd) { fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK); }

// Reads what is available; false at EOF or on an error.
bool Drain(int fd, std::string& into, size_t limit, bool& truncated, bool keep_tail) {
  char buf[65536];
  while (true) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n > 0) {
      into.append(buf, static_cast<size_t>(n));
      if (into.size() > limit) {
        if (keep_tail) {
          if (into.size() > 2 * limit) into.erase(0, into.size() - limit);
        } else {
          into.resize(limit);
          truncated = true;
        }
      }
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return true;
    return false;  // EOF or error
  }
}

int MillisUntil(Clock::time_point t) {
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t - Clock::now()).count();
  return static_cast<int>(std::clamp<int64_t>(ms, 0, 1 << 30));
}

}  // namespace

ChildResult RunChild(const ChildSpec& spec, int cancel_fd) {
  ChildResult out;
  Pipe in, stdout_pipe, stderr_pipe;
  if (spec.argv.empty()) {
    out.spawn_error = "no command";
    return out;
  }
  if (!MakePipe(in) || !MakePipe(stdout_pipe) || !MakePipe(stderr_pipe)) {
    out.spawn_error = std::string("pipe: ") + strerror(errno);
    return out;
  }

  std::vector<std::string> args = spec.argv, env = spec.env;
  std::vector<char*> argv, envp;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in.read.get(), 0);
  posix_spawn_file_actions_adddup2(&actions, stdout_pipe.write.get(), 1);
  posix_spawn_file_actions_adddup2(&actions, stderr_pipe.write.get(), 2);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  // Own process group (signals reach everything it starts; a terminal's Ctrl-C does not
  // reach it directly); default signal handling and an empty mask, whatever ours are.
  sigset_t none, defaults;
  sigemptyset(&none);
  sigemptyset(&defaults);
  for (int s : {SIGINT, SIGTERM, SIGPIPE, SIGHUP, SIGQUIT, SIGCHLD, SIGUSR1, SIGUSR2}) {
    sigaddset(&defaults, s);
  }
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  pid_t pid = -1;
  int rc = posix_spawnp(&pid, argv[0], &actions, &attr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    out.spawn_error = "cannot run " + spec.argv[0] + ": " + strerror(rc);
    return out;
  }
  out.spawned = true;
  in.read.Reset();
  stdout_pipe.write.Reset();
  stderr_pipe.write.Reset();
  SetNonBlocking(in.write.get());
  SetNonBlocking(stdout_pipe.read.get());
  SetNonBlocking(stderr_pipe.read.get());
  UniqueFd pidfd(static_cast<int>(syscall(SYS_pidfd_open, pid, 0)));

  size_t written = 0;
  if (spec.stdin_data.empty()) in.write.Reset();
  bool reaped = false, stdout_open = true, stderr_open = true, stderr_trunc = false;
  bool terminating = false;
  Clock::time_point kill_at{};
  Clock::time_point give_up_pipes{};  // after the exit, how long leftover writers may hold
  int status = 0;

  auto signal_group = [&](int signo) {
    if (!reaped) kill(-pid, signo);  // the leader is at worst a zombie: its pgid is ours
  };
  auto reap = [&] {
    signal_group(SIGKILL);  // whatever it left running in its group dies with it
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    reaped = true;
    give_up_pipes = Clock::now() + std::chrono::seconds(2);
  };

  while (!reaped || stdout_open || stderr_open) {
    pollfd fds[5];
    int n = 0;
    int i_in = -1, i_out = -1, i_err = -1, i_pid = -1, i_cancel = -1;
    if (in.write.valid()) fds[i_in = n++] = {in.write.get(), POLLOUT, 0};
    if (stdout_open) fds[i_out = n++] = {stdout_pipe.read.get(), POLLIN, 0};
    if (stderr_open) fds[i_err = n++] = {stderr_pipe.read.get(), POLLIN, 0};
    if (!reaped && pidfd.valid()) fds[i_pid = n++] = {pidfd.get(), POLLIN, 0};
    if (!reaped && !terminating && cancel_fd >= 0) fds[i_cancel = n++] = {cancel_fd, POLLIN, 0};
    int timeout = -1;
    if (reaped) timeout = MillisUntil(give_up_pipes);
    if (!reaped && terminating) timeout = MillisUntil(kill_at);
    if (!reaped && !pidfd.valid()) timeout = timeout < 0 ? 50 : std::min(timeout, 50);
    int ready = poll(fds, static_cast<nfds_t>(n), timeout);
    if (ready < 0 && errno != EINTR) break;

    if (i_in >= 0 && fds[i_in].revents) {
      ssize_t w =
          write(in.write.get(), spec.stdin_data.data() + written, spec.stdin_data.size() - written);
      if (w > 0) written += static_cast<size_t>(w);
      if ((w < 0 && errno != EAGAIN && errno != EINTR) || written == spec.stdin_data.size()) {
        in.write.Reset();  // all written, or the reader went away (EPIPE)
      }
    }
    if (i_out >= 0 && fds[i_out].revents) {
      stdout_open = Drain(stdout_pipe.read.get(), out.stdout_data, spec.max_stdout_bytes,
                          out.stdout_truncated, /*keep_tail=*/false);
    }
    if (i_err >= 0 && fds[i_err].revents) {
      stderr_open = Drain(stderr_pipe.read.get(), out.stderr_tail, spec.stderr_tail_bytes,
                          stderr_trunc, /*keep_tail=*/true);
    }
    if (i_cancel >= 0 && fds[i_cancel].revents) {
      terminating = true;
      out.cancelled = true;
      kill_at = Clock::now() + spec.kill_grace;
      signal_group(SIGTERM);
    }
    if (!reaped && terminating && Clock::now() >= kill_at) signal_group(SIGKILL);
    if (!reaped) {
      bool gone = false;
      if (i_pid >= 0) {
        gone = fds[i_pid].revents != 0;
      } else {  // no pidfd (kernel < 5.3): look without reaping, every 50 ms
        siginfo_t info{};
        gone = waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
               info.si_pid == pid;
      }
      if (gone) reap();
    }
    if (reaped && Clock::now() >= give_up_pipes) break;  // a writer escaped the group
  }
  if (!reaped) reap();
  if (out.stderr_tail.size() > spec.stderr_tail_bytes) {
    out.stderr_tail.erase(0, out.stderr_tail.size() - spec.stderr_tail_bytes);
  }
  if (WIFEXITED(status)) {
    out.exited = true;
    out.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    out.term_signal = WTERMSIG(status);
  }
  return out;
}

}  // namespace sluice
