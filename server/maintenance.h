// Maintenance as small services. Each has RunOnce(now) returning what it changed, so a
// test moves a ManualClock instead of sleeping; MaintenanceLoop drives them on Asio
// timers that re-arm from their previous expiry (no drift).
//   LeaseReaper     — lapsed leases back to queued, or failed (DESIGN.md rule 7)
//   DeadlineExpirer — queued jobs past their deadline become expired (rule 6; period
//                     250 ms, so "within one second")
//   Cleaner         — finished jobs and idempotency keys older than the retention, and
//                     intake-limiter keys whose quota is whole again,
//                     deleted in batches
// There is no retry scheduler: a job in backoff is queued with a future available_at,
// and the dispatcher's timer already wakes at the earliest one.
// Thread-safety: RunOnce may be called from any thread (the store is thread-safe).
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <vector>

#include "server/asio.h"
#include "shaper/clock.h"
#include "store/store.h"

namespace sluice {

class LeaseReaper {
 public:
  explicit LeaseReaper(Store& store) : store_(store) {}
  Result<MaintenanceCounts> RunOnce(Micros now) { return store_.ReapLeases(now); }

 private:
  Store& store_;
};

class DeadlineExpirer {
 public:
  explicit DeadlineExpirer(Store& store) : store_(store) {}
  Result<MaintenanceCounts> RunOnce(Micros now) { return store_.ExpireDeadlines(now); }

 private:
  Store& store_;
};

class Cleaner {
 public:
  Cleaner(Store& store, Micros retention, int64_t batch = 1000)
      : store_(store), retention_(retention), batch_(batch) {}
  // Deletes batches until fewer than a full batch was left.
  Result<MaintenanceCounts> RunOnce(Micros now);

 private:
  Store& store_;
  Micros retention_;
  int64_t batch_;
};

// Runs services periodically on an io_context; `on_change` is called (on the Asio
// thread) after a run that changed something, e.g. to wake the dispatcher.
class MaintenanceLoop {
 public:
  MaintenanceLoop(boost::asio::io_context& io, const Clock& clock,
                  std::function<void(const MaintenanceCounts&)> on_change);
  void Every(std::chrono::milliseconds period,
             std::function<Result<MaintenanceCounts>(Micros)> run_once);

 private:
  struct Task {
    boost::asio::steady_timer timer;
    std::chrono::milliseconds period;
    std::function<Result<MaintenanceCounts>(Micros)> run_once;
  };
  void Arm(Task& task);

  boost::asio::io_context& io_;
  const Clock& clock_;
  std::function<void(const MaintenanceCounts&)> on_change_;
  std::vector<std::unique_ptr<Task>> tasks_;
};

}  // namespace sluice
