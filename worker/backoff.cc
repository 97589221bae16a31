#include "worker/backoff.h"

#include <algorithm>

#include "shaper/backoff.h"

namespace sluice {

int64_t RetryDelayMs(const BackoffPolicy& policy, int64_t failures,
                     std::optional<int64_t> retry_after_s, double unit_random) {
  int64_t jitter = FullJitterBackoffMs(policy.base_ms, policy.max_ms,
                                       std::max<int64_t>(failures, 1), unit_random);
  int64_t floor_ms = retry_after_s ? std::max<int64_t>(*retry_after_s, 0) * 1000 : 0;
  return floor_ms + jitter;
}

int64_t JitteredWaitMs(int64_t wait_ms, double unit_random) {
  if (wait_ms <= 0) return 0;
  unit_random = std::clamp(unit_random, 0.0, 1.0);
  int64_t half = wait_ms / 2;
  return std::min(
      wait_ms, half + static_cast<int64_t>(unit_random * static_cast<double>(wait_ms - half + 1)));
}

int LeaseBatchSize(int free_slots, int max_per_request) {
  return std::max(0, std::min(free_slots, max_per_request));
}

std::optional<int64_t> HeartbeatExtendMs(int64_t lease_ms, int64_t run_ms,
                                         std::optional<int64_t> timeout_ms, int64_t min_extend_ms) {
  int64_t extend = lease_ms;
  if (timeout_ms) extend = std::min(extend, *timeout_ms - run_ms);
  if (extend < min_extend_ms) return std::nullopt;
  return extend;
}

}  // namespace sluice
