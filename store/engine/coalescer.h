// Gathers work that arrives while earlier batches are in flight into the next batch:
// at most `max_in_flight` batches run at once, each of at most `max_batch` items; an
// item that finds a free slot starts a batch of its own at once (no wait, no timer),
// and a batch that finishes starts the next one with whatever arrived meanwhile. So
// batches grow with the load and a quiet moment costs nothing.
// Thread-safe. `run` must call `finished` exactly once, from any thread, once the batch
// no longer needs its slot; it may do so before its own callers hear back.
#pragma once

#include <algorithm>
#include <cstddef>
#include <deque>
#include <functional>
#include <iterator>
#include <mutex>
#include <utility>
#include <vector>

namespace sluice {

template <typename Item>
class Coalescer {
 public:
  using Run = std::function<void(std::vector<Item> batch, std::function<void()> finished)>;

  Coalescer(size_t max_in_flight, size_t max_batch, Run run)
      : max_in_flight_(std::max<size_t>(1, max_in_flight)),
        max_batch_(std::max<size_t>(1, max_batch)),
        run_(std::move(run)) {}

  void Add(Item item) {
    std::vector<Item> batch;
    {
      std::lock_guard lock(mu_);
      pending_.push_back(std::move(item));
      if (in_flight_ >= max_in_flight_) return;
      ++in_flight_;
      batch = TakeLocked();
    }
    Start(std::move(batch));
  }

 private:
  std::vector<Item> TakeLocked() {
    const size_t n = std::min(max_batch_, pending_.size());
    std::vector<Item> batch(std::make_move_iterator(pending_.begin()),
                            std::make_move_iterator(pending_.begin() + static_cast<long>(n)));
    pending_.erase(pending_.begin(), pending_.begin() + static_cast<long>(n));
    return batch;
  }

  void Start(std::vector<Item> batch) {
    run_(std::move(batch), [this] { Finished(); });
  }

  void Finished() {
    std::vector<Item> batch;
    {
      std::lock_guard lock(mu_);
      if (pending_.empty()) {
        --in_flight_;
        return;
      }
      batch = TakeLocked();
    }
    Start(std::move(batch));
  }

  const size_t max_in_flight_;
  const size_t max_batch_;
  const Run run_;
  std::mutex mu_;
  std::deque<Item> pending_;  // guarded by mu_
  size_t in_flight_ = 0;      // guarded by mu_
};

}  // namespace sluice
