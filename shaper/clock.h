// Where "now" comes from. The shaper and the store never read a clock: callers pass
// `now`. The server's edge uses SystemClock; tests use ManualClock (tests/testutil).
#pragma once

#include "common/time.h"

namespace sluice {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual Micros Now() const = 0;
};

class SystemClock final : public Clock {
 public:
  Micros Now() const override { return WallNowMicros(); }
};

}  // namespace sluice
