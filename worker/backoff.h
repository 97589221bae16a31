// Client-side timing decisions, pure (the random draw is passed in, time is passed in):
// reconnect backoff with full jitter that honors Retry-After, jittered long-poll waits,
// and how many jobs to ask for. Shared by the worker library and the submitting example.
// Thread-safe (no state).
#pragma once

#include <cstdint>
#include <optional>

namespace sluice {

// Exponential backoff with full jitter (the formula of shaper/backoff.h).
struct BackoffPolicy {
  int64_t base_ms = 200;   // ceiling of the first delay
  int64_t max_ms = 30000;  // ceiling of any delay (before Retry-After is added)
};

// The delay before retry number `failures` (counting from 1) of a request that failed
// with no answer, a 503 or a 429. `unit_random` is uniform in [0, 1).
//   delay = retry_after_s * 1000 + random(0, min(max_ms, base_ms * 2^(failures-1)))
// A server's Retry-After is a floor (never retry earlier than it asked); the jitter on
// top keeps clients that got the same Retry-After from coming back in lockstep.
int64_t RetryDelayMs(const BackoffPolicy& policy, int64_t failures,
                     std::optional<int64_t> retry_after_s, double unit_random);

// A long-poll wait spread uniformly over [wait_ms / 2, wait_ms], so workers started
// together drift apart instead of polling in step.
int64_t JitteredWaitMs(int64_t wait_ms, double unit_random);

// How many jobs one lease request may ask for: never more than the free slots, never
// more than the server accepts in one request (`max_per_request`); 0 means: do not ask.
int LeaseBatchSize(int free_slots, int max_per_request);

// The `extend_ms` of a heartbeat sent `run_ms` after the job started: the lease length,
// cut so the lease ends no later than `timeout_ms` after the start (if a timeout is
// set). Returns nullopt when less than `min_extend_ms` is left: let the lease run out.
std::optional<int64_t> HeartbeatExtendMs(int64_t lease_ms, int64_t run_ms,
                                         std::optional<int64_t> timeout_ms,
                                         int64_t min_extend_ms = 100);

}  // namespace sluice
