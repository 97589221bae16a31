#include "shaper/backoff.h"

#include <algorithm>

namespace sluice {

int64_t FullJitterBackoffMs(int64_t base_ms, int64_t max_ms, int64_t attempt, double unit_random) {
  if (base_ms <= 0 || max_ms <= 0) return 0;
  // base * 2^(attempt-1), saturating at max_ms without overflow.
  int64_t ceiling = std::min(base_ms, max_ms);
  for (int64_t i = 1; i < attempt && ceiling < max_ms; ++i) {
    ceiling = ceiling > max_ms / 2 ? max_ms : ceiling * 2;
  }
  // NaN compares false with everything: it would pass a clamp and make the cast UB.
  unit_random = unit_random >= 0.0 ? std::min(unit_random, 1.0) : 0.0;
  double draw = unit_random * (static_cast<double>(ceiling) + 1.0);
  if (draw >= static_cast<double>(ceiling)) return ceiling;
  return static_cast<int64_t>(draw);
}

}  // namespace sluice
