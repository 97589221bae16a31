#include "shaper/backoff.h"

#include <algorithm>

namespace sluice {

int64_t FullJitterBackoffMs(int64_t base_ms, int64_t max_ms, int64_t attempt, double unit_random) {
  int64_t ceiling = base_ms;
  for (int64_t i = 1; i < attempt && ceiling < max_ms; ++i) ceiling *= 2;
  ceiling = std::min(ceiling, max_ms);
  if (ceiling <= 0) return 0;
  unit_random = std::clamp(unit_random, 0.0, 1.0);
  return std::min<int64_t>(ceiling,
                           static_cast<int64_t>(unit_random * static_cast<double>(ceiling + 1)));
}

}  // namespace sluice
