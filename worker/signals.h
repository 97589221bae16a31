// Runs a Worker with SIGINT and SIGTERM taken by one thread (sigwait) instead of
// handlers: every other thread, and so every child (whose mask is reset at spawn),
// starts with them blocked. Shared by sluice-worker and the C++ example worker.
#pragma once

#include <functional>

#include "common/error.h"
#include "worker/worker.h"

namespace sluice {

// Blocks SIGINT and SIGTERM in the calling thread (call before starting any other
// thread, so that they inherit the mask), runs `worker`, and calls `on_signal` on the
// signal thread for each SIGINT or SIGTERM with its number and how many have come so
// far (1, 2, ...). Returns what Worker::Run returns.
Status RunUntilSignalled(Worker& worker, const std::function<void(int signo, int nth)>& on_signal);

// Blocks SIGINT and SIGTERM (and SIGUSR1, used to end the signal thread) in the
// calling thread. RunUntilSignalled does it too; call it first thing, before any
// thread starts, so that every thread inherits the mask.
void BlockStopSignals();

}  // namespace sluice
