// A clock the test moves by hand: virtual time for the shaper and the store.
// Thread-safe.
#pragma once

#include <atomic>

#include "shaper/clock.h"

namespace sluice::testing {

class ManualClock final : public Clock {
 public:
  explicit ManualClock(Micros start = 1'800'000'000'000'000) : now_(start) {}
  Micros Now() const override { return now_.load(); }
  void Set(Micros t) { now_.store(t); }
  void Advance(Micros d) { now_.fetch_add(d); }

 private:
  std::atomic<Micros> now_;
};

}  // namespace sluice::testing
