// The client's timing math (worker/backoff.h), with the random draw supplied, and which
// answers it retries (client/problem.h IsTransient).
#include "worker/backoff.h"

#include <catch2/catch.hpp>

#include "client/problem.h"

namespace sluice {
namespace {

TEST_CASE("retry delay: full jitter under an exponential ceiling") {
  BackoffPolicy p{100, 1000};
  CHECK(RetryDelayMs(p, 1, std::nullopt, 0.0) == 0);
  CHECK(RetryDelayMs(p, 1, std::nullopt, 0.999999) == 100);
  CHECK(RetryDelayMs(p, 2, std::nullopt, 0.999999) == 200);
  CHECK(RetryDelayMs(p, 3, std::nullopt, 0.5) == 200);
  CHECK(RetryDelayMs(p, 4, std::nullopt, 0.999999) == 800);
  CHECK(RetryDelayMs(p, 5, std::nullopt, 0.999999) == 1000);    // capped
  CHECK(RetryDelayMs(p, 500, std::nullopt, 0.999999) == 1000);  // no overflow
  CHECK(RetryDelayMs(p, 0, std::nullopt, 0.999999) == 100);     // treated as the first
}

TEST_CASE("retry delay: Retry-After is a floor, jitter comes on top") {
  BackoffPolicy p{100, 1000};
  CHECK(RetryDelayMs(p, 1, 3, 0.0) == 3000);
  CHECK(RetryDelayMs(p, 1, 3, 0.999999) == 3100);
  CHECK(RetryDelayMs(p, 9, 2, 0.5) == 2500);
  CHECK(RetryDelayMs(p, 1, -4, 0.0) == 0);
  for (double r = 0; r < 1; r += 0.01) {
    int64_t d = RetryDelayMs(p, 6, 5, r);
    CHECK(d >= 5000);
    CHECK(d <= 6000);
  }
}

TEST_CASE("jittered long-poll waits spread over [w/2, w]") {
  CHECK(JitteredWaitMs(20000, 0.0) == 10000);
  CHECK(JitteredWaitMs(20000, 0.999999) == 20000);
  CHECK(JitteredWaitMs(20000, 0.5) == 15000);
  CHECK(JitteredWaitMs(0, 0.7) == 0);
  int64_t lo = 1 << 30, hi = 0;
  for (double r = 0; r < 1; r += 0.001) {
    lo = std::min(lo, JitteredWaitMs(1000, r));
    hi = std::max(hi, JitteredWaitMs(1000, r));
  }
  CHECK(lo == 500);
  CHECK(hi == 1000);
}

TEST_CASE("a lease request never asks for more than the free slots") {
  CHECK(LeaseBatchSize(0, 100) == 0);
  CHECK(LeaseBatchSize(-2, 100) == 0);
  CHECK(LeaseBatchSize(3, 100) == 3);
  CHECK(LeaseBatchSize(250, 100) == 100);
}

TEST_CASE("heartbeats extend by the lease, but not past the timeout") {
  CHECK(HeartbeatExtendMs(3000, 500, std::nullopt) == 3000);
  CHECK(HeartbeatExtendMs(3000, 500, 10000) == 3000);
  CHECK(HeartbeatExtendMs(3000, 8000, 10000) == 2000);
  CHECK(HeartbeatExtendMs(3000, 9950, 10000) == std::nullopt);  // < 100 ms left
  CHECK(HeartbeatExtendMs(3000, 12000, 10000) == std::nullopt);
}

// Every refusal that asks the client to come back later is worth a retry, an intake
// layer's 429 included; the ones no wait changes are not.
TEST_CASE("which answers a client retries after a backoff") {
  for (const char* body : {R"({"error":"rate_limited","retry_after":7})",
                           R"({"error":"queue_full","retry_after":7})"}) {
    const Error e = ToError(ParseProblem(429, body, ""));
    CHECK(IsTransient(e));
    CHECK(e.retry_after_s == 7);
    CHECK(RetryDelayMs(BackoffPolicy{}, 1, e.retry_after_s, 0.999) >= 7000);
  }
  // A concurrency layer's refusal names no wait: backoff alone.
  const Error no_wait = ToError(ParseProblem(429, R"({"error":"rate_limited"})", ""));
  CHECK(IsTransient(no_wait));
  CHECK_FALSE(no_wait.retry_after_s.has_value());
  CHECK(IsTransient(ToError(ParseProblem(503, "", "2"))));
  CHECK_FALSE(IsTransient(ToError(ParseProblem(429, R"({"error":"deadline_unreachable"})", ""))));
  CHECK_FALSE(IsTransient(ToError(ParseProblem(401, R"({"error":"unauthorized"})", ""))));
}

}  // namespace
}  // namespace sluice
