#include "server/dispatcher.h"

#include <algorithm>
#include <future>

namespace sluice {

Dispatcher::Dispatcher(boost::asio::io_context& io, Store& store, const Clock& clock,
                       Micros lookahead, std::function<void(Micros)> on_release)
    : io_(io),
      store_(store),
      clock_(clock),
      lookahead_(lookahead),
      on_release_(std::move(on_release)),
      timer_(io) {}

void Dispatcher::LeaseAsync(LeaseRequest request, std::chrono::milliseconds wait, LeaseDone done,
                            std::function<bool()> gone) {
  auto w = std::make_shared<Waiter>();
  w->request = std::move(request);
  w->deadline = clock_.Now() + std::max<int64_t>(0, wait.count()) * kMicrosPerMilli;
  w->done = std::move(done);
  w->gone = std::move(gone);
  bool parked = false;
  {
    std::lock_guard lock(mu_);
    if (!shut_down_) {
      waiters_.push_back(w);
      parked = true;
    }
  }
  if (!parked) return w->done(std::vector<JobRecord>{});  // shut down: answered at once
  Notify();
}

Result<std::vector<JobRecord>> Dispatcher::Lease(LeaseRequest request,
                                                 std::chrono::milliseconds wait) {
  std::promise<Result<std::vector<JobRecord>>> promise;
  auto future = promise.get_future();
  LeaseAsync(std::move(request), wait,
             [&promise](Result<std::vector<JobRecord>> r) { promise.set_value(std::move(r)); });
  return future.get();
}

void Dispatcher::Notify() {
  {
    std::lock_guard lock(mu_);
    // Nobody is waiting: nothing to lease for (a new waiter posts its own pump).
    if (pump_posted_ || shut_down_ || waiters_.empty()) return;
    pump_posted_ = true;
  }
  boost::asio::post(io_, [this] { Pump(); });
}

void Dispatcher::NotifyLeaseEnded() {
  if (cap_blocked_.load()) Notify();
}

void Dispatcher::Shutdown() {
  {
    std::lock_guard lock(mu_);
    shut_down_ = true;
  }
  // On the Asio thread, so that it never overlaps a Pump (invariant 1).
  boost::asio::dispatch(io_, [this] {
    std::list<std::shared_ptr<Waiter>> waiters;
    {
      std::lock_guard lock(mu_);
      waiters.swap(waiters_);
    }
    timer_.cancel();
    for (auto& h : handouts_) h->cancel();  // committed leases go out now
    for (auto& w : waiters) w->done(std::vector<JobRecord>{});
  });
}

size_t Dispatcher::waiting() const {
  std::lock_guard lock(mu_);
  return static_cast<size_t>(
      std::count_if(waiters_.begin(), waiters_.end(), [](const auto& w) { return !w->HungUp(); }));
}

bool Dispatcher::HasWaiterFor(const std::string& queue) const {
  std::lock_guard lock(mu_);
  for (const auto& w : waiters_) {
    const auto& qs = w->request.queues;
    if (!w->HungUp() && std::find(qs.begin(), qs.end(), queue) != qs.end()) return true;
  }
  return false;
}

void Dispatcher::Pump() {
  std::vector<std::shared_ptr<Waiter>> batch, hung_up;
  {
    std::lock_guard lock(mu_);
    pump_posted_ = false;
    // A caller that hung up gets nothing: jobs leased to it would sit unseen until
    // their lease ran out.
    for (auto it = waiters_.begin(); it != waiters_.end();) {
      if ((*it)->HungUp()) {
        hung_up.push_back(*it);
        it = waiters_.erase(it);
      } else {
        batch.push_back(*it);
        ++it;
      }
    }
  }
  for (auto& w : hung_up) w->done(std::vector<JobRecord>{});
  if (batch.empty()) return;

  const Micros now = clock_.Now();
  std::vector<LeaseRequest> requests;
  requests.reserve(batch.size());
  for (auto& w : batch) requests.push_back(w->request);
  // Releases due within the lookahead are committed now and handed out at their time,
  // so the commit's fsync is not on the path between release time and hand-out.
  std::vector<Result<LeaseOutcome>> results = store_.LeaseMany(requests, now, now + lookahead_);
  const Micros after = clock_.Now();
  for (const auto& r : results) {
    if (!r.ok() || r.value().now == 0) continue;
    // A store on this process's clock decided at exactly `now`: no offset at all.
    store_offset_ = r.value().now == now ? 0 : r.value().now - (now + (after - now) / 2);
    break;
  }

  std::optional<Micros> wake_at;
  bool cap_blocked = false;
  for (const auto& r : results) cap_blocked = cap_blocked || (r.ok() && r.value().cap_blocked);
  cap_blocked_.store(cap_blocked);
  std::vector<std::shared_ptr<Waiter>> finished;
  for (size_t i = 0; i < batch.size(); ++i) {
    auto& w = batch[i];
    Result<LeaseOutcome>& r = results[i];
    if (!r.ok() || !r.value().jobs.empty() || now >= w->deadline) {
      finished.push_back(w);
      continue;
    }
    Micros next = w->deadline;
    if (r.value().wake_at) next = std::min(next, *r.value().wake_at - store_offset_ - lookahead_);
    if (recheck_ > 0) next = std::min(next, now + recheck_);
    if (!wake_at || next < *wake_at) wake_at = next;
  }
  {
    std::lock_guard lock(mu_);
    for (auto& w : finished) waiters_.remove(w);
  }
  for (size_t i = 0, f = 0; i < batch.size() && f < finished.size(); ++i) {
    if (batch[i] != finished[f]) continue;
    ++f;
    Result<LeaseOutcome>& r = results[i];
    if (!r.ok()) {
      batch[i]->done(r.error());
      continue;
    }
    Micros handout_at = 0;  // this process's time for the latest release among them
    for (const JobRecord& j : r.value().jobs)
      handout_at = std::max(handout_at, j.leased_at.value_or(0) - store_offset_);
    HandOut(batch[i], std::move(r.value().jobs), handout_at);
  }
  // A waiter may have been added (or Shutdown called) meanwhile: it posted its own pump.
  if (wake_at) ArmTimer(*wake_at, now);
}

void Dispatcher::HandOut(const std::shared_ptr<Waiter>& w, std::vector<JobRecord> jobs, Micros at) {
  const Micros now = clock_.Now();
  if (at <= now) {
    Deliver(*w, std::move(jobs));
    return;
  }
  auto timer = std::make_shared<boost::asio::steady_timer>(io_);
  timer->expires_after(std::chrono::microseconds(at - now));
  handouts_.push_back(timer);
  auto it = std::prev(handouts_.end());
  timer->async_wait(
      [this, w, it, jobs = std::move(jobs)](const boost::system::error_code&) mutable {
        // On time, or early at shutdown (cancelled): the leases are committed either way.
        handouts_.erase(it);
        Deliver(*w, std::move(jobs));
      });
}

void Dispatcher::Deliver(Waiter& w, std::vector<JobRecord> jobs) {
  if (on_release_) {
    const Micros now = clock_.Now();
    for (const JobRecord& j : jobs) {
      const Micros released_at = j.leased_at ? *j.leased_at - store_offset_ : now;
      on_release_(now - released_at);
    }
  }
  w.done(std::move(jobs));
}

void Dispatcher::ArmTimer(Micros wake_at, Micros now) {
  timer_.expires_after(std::chrono::microseconds(std::max<Micros>(0, wake_at - now)));
  timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec) return;  // re-armed or cancelled
    Notify();
  });
}

}  // namespace sluice
