#include "server/dispatcher.h"

#include <algorithm>

namespace sluice {

Dispatcher::Dispatcher(boost::asio::io_context& io, Store& store, const Clock& clock)
    : io_(io), store_(store), clock_(clock), timer_(io) {}

Result<std::vector<JobRecord>> Dispatcher::Lease(LeaseRequest request,
                                                 std::chrono::milliseconds wait) {
  auto w = std::make_shared<Waiter>();
  w->request = std::move(request);
  w->deadline = clock_.Now() + std::max<int64_t>(0, wait.count()) * kMicrosPerMilli;
  auto future = w->done.get_future();
  {
    std::lock_guard lock(mu_);
    if (shut_down_) return std::vector<JobRecord>{};
    waiters_.push_back(w);
  }
  Notify();
  return future.get();
}

void Dispatcher::Notify() {
  {
    std::lock_guard lock(mu_);
    if (pump_posted_ || shut_down_) return;
    pump_posted_ = true;
  }
  boost::asio::post(io_, [this] { Pump(); });
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
    for (auto& w : waiters) w->done.set_value(std::vector<JobRecord>{});
  });
}

size_t Dispatcher::waiting() const {
  std::lock_guard lock(mu_);
  return waiters_.size();
}

bool Dispatcher::HasWaiterFor(const std::string& queue) const {
  std::lock_guard lock(mu_);
  for (const auto& w : waiters_) {
    const auto& qs = w->request.queues;
    if (std::find(qs.begin(), qs.end(), queue) != qs.end()) return true;
  }
  return false;
}

void Dispatcher::Pump() {
  std::vector<std::shared_ptr<Waiter>> batch;
  {
    std::lock_guard lock(mu_);
    pump_posted_ = false;
    batch.assign(waiters_.begin(), waiters_.end());
  }
  if (batch.empty()) return;

  const Micros now = clock_.Now();
  std::vector<LeaseRequest> requests;
  requests.reserve(batch.size());
  for (auto& w : batch) requests.push_back(w->request);
  std::vector<Result<LeaseOutcome>> results = store_.LeaseMany(requests, now);

  std::optional<Micros> wake_at;
  std::vector<std::shared_ptr<Waiter>> finished;
  for (size_t i = 0; i < batch.size(); ++i) {
    auto& w = batch[i];
    Result<LeaseOutcome>& r = results[i];
    if (!r.ok() || !r.value().jobs.empty() || now >= w->deadline) {
      finished.push_back(w);
      continue;
    }
    Micros next = w->deadline;
    if (r.value().wake_at) next = std::min(next, *r.value().wake_at);
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
    if (r.ok()) {
      batch[i]->done.set_value(std::move(r.value().jobs));
    } else {
      batch[i]->done.set_value(r.error());
    }
  }
  // A waiter may have been added (or Shutdown called) meanwhile: it posted its own pump.
  if (wake_at) ArmTimer(*wake_at, now);
}

void Dispatcher::ArmTimer(Micros wake_at, Micros now) {
  timer_.expires_after(std::chrono::microseconds(std::max<Micros>(0, wake_at - now)));
  timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec) return;  // re-armed or cancelled
    Notify();
  });
}

}  // namespace sluice
