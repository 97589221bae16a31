#include "worker/signals.h"

#include <pthread.h>
#include <signal.h>

#include <thread>

namespace sluice {
namespace {

sigset_t StopSignals() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGUSR1);  // "Run() returned": ends the signal thread
  return signals;
}

}  // namespace

void BlockStopSignals() {
  sigset_t signals = StopSignals();
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
}

Status RunUntilSignalled(Worker& worker, const std::function<void(int signo, int nth)>& on_signal) {
  BlockStopSignals();
  std::thread signal_thread([&on_signal] {
    sigset_t signals = StopSignals();
    int seen = 0;
    for (;;) {
      int signo = 0;
      if (sigwait(&signals, &signo) != 0 || signo == SIGUSR1) return;
      on_signal(signo, ++seen);
    }
  });
  Status status = worker.Run();
  pthread_kill(signal_thread.native_handle(), SIGUSR1);
  signal_thread.join();
  return status;
}

}  // namespace sluice
