// Long-poll leases: HTTP threads park here until jobs are released to them or their
// wait ends. One Asio thread owns the waiters: it leases for all of them at once (one
// store transaction, FIFO among waiters) whenever something may have changed — a
// submit, a lease ending, a policy change — or when a timer set at the next release
// time fires. No polling tick, unless RecheckEvery asks for one (several instances:
// a change another instance made is heard through the store, and the re-check bounds
// the wait should that be missed).
//
// Times: the store decides on its own clock (the database's, on PostgreSQL), which may
// not be this process's. Each pump measures the offset between the two, and release
// and wake-up times are turned into this process's time before timers are set.
//
// Invariants:
//   1. Only the Asio thread completes a waiter, exactly once; jobs leased for a waiter
//      are always handed to it.
//   2. After Shutdown(), every waiter is answered with no jobs and new ones return at once.
// Thread-safe: Lease() and Notify() may be called from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <vector>

#include "server/asio.h"
#include "shaper/clock.h"
#include "store/store.h"

namespace sluice {

class Dispatcher {
 public:
  // `lookahead`: releases due this soon are committed ahead and handed out on time.
  // `on_release`, if set, hears each job's hand-out lag: hand-out time minus its
  // release time (µs; on the Asio thread).
  Dispatcher(boost::asio::io_context& io, Store& store, const Clock& clock,
             Micros lookahead = 10000, std::function<void(Micros)> on_release = nullptr);

  using LeaseDone = std::function<void(Result<std::vector<JobRecord>>)>;

  // Parks a long-poll: `done` is called once, on the Asio thread, with the jobs leased
  // for it or with none once `wait` has passed (after Shutdown: at once, on the calling
  // thread). `done` must not block.
  // `gone`, if given, tells that the caller hung up: it gets no jobs, and is answered.
  void LeaseAsync(LeaseRequest request, std::chrono::milliseconds wait, LeaseDone done,
                  std::function<bool()> gone = nullptr);
  // LeaseAsync, blocking the calling thread until it is answered.
  Result<std::vector<JobRecord>> Lease(LeaseRequest request, std::chrono::milliseconds wait);

  // While waiters are parked, look again at least this often (0: never). Call before
  // serving.
  void RecheckEvery(std::chrono::milliseconds period) {
    recheck_ = period.count() * kMicrosPerMilli;
  }

  // Something may have become releasable: re-run the waiters.
  void Notify();
  // A lease ended (complete): re-run the waiters only if a cap was holding work back.
  void NotifyLeaseEnded();

  // Answers every waiter with no jobs (on the Asio thread, which must still run);
  // later calls to Lease return at once.
  void Shutdown();

  // Parked long-polls whose callers are still there.
  size_t waiting() const;
  // Whether a parked long-poll asks for `queue` (DESIGN.md blocked_by `no_worker`).
  bool HasWaiterFor(const std::string& queue) const;

 private:
  struct Waiter {
    LeaseRequest request;
    Micros deadline;
    LeaseDone done;
    std::function<bool()> gone;
    bool HungUp() const { return gone && gone(); }
  };

  void Pump();  // on the Asio thread
  void ArmTimer(Micros wake_at, Micros now);
  // Completes `w` with `jobs` at `at` (their release time), or now if that has passed.
  void HandOut(const std::shared_ptr<Waiter>& w, std::vector<JobRecord> jobs, Micros at);
  void Deliver(Waiter& w, std::vector<JobRecord> jobs);

  boost::asio::io_context& io_;
  Store& store_;
  const Clock& clock_;
  const Micros lookahead_;
  std::function<void(Micros)> on_release_;
  Micros recheck_ = 0;
  Micros store_offset_ = 0;  // store's clock minus this process's, at the last pump (Asio thread)
  boost::asio::steady_timer timer_;  // used on the Asio thread only
  // Leases committed ahead of their release time, waiting to go out (Asio thread only).
  std::list<std::shared_ptr<boost::asio::steady_timer>> handouts_;

  mutable std::mutex mu_;
  std::list<std::shared_ptr<Waiter>> waiters_;  // guarded by mu_, FIFO
  bool pump_posted_ = false;                    // guarded by mu_
  std::atomic<bool> cap_blocked_{false};        // the last pump saw work held back by a cap
  bool shut_down_ = false;                      // guarded by mu_
};

}  // namespace sluice
