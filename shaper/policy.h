// A queue's shaping policy (DESIGN.md "Shaping semantics"), its JSON form, and the
// ranges of its fields (docs/shaping.md). Rates are integers in milli-cost-units per
// second so that schedules are exact. Plain values; thread-compatible.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "common/error.h"

namespace sluice {

// Ranges PolicyFromJson enforces. A bucket's whole backlog fits the time type with room
// to spare: for the queue's bucket and every tenant's (as ForTenant resolves it),
// draining a full bucket (capacity / rate) and the burst tolerance ((burst - 1) / rate)
// each take at most kMaxPolicySpanSeconds.
inline constexpr int64_t kMinRateMilli = 1;                                // rate 0.001 per second
inline constexpr int64_t kMaxRateMilli = 1'000'000'000'000;                // rate 1e9 per second
inline constexpr int64_t kMaxPolicyCount = 1'000'000'000'000;              // capacity, burst, caps
inline constexpr int64_t kMaxPolicySpanSeconds = 100LL * 365 * 24 * 3600;  // 100 years
inline constexpr int64_t kMaxPolicyMs = 365LL * 24 * 3600 * 1000;          // 1 year
inline constexpr int64_t kMinLeaseMs = 100;
inline constexpr int64_t kMaxAttempts = 1000;

// Per-tenant overrides: any field left empty inherits the queue's value.
struct TenantOverride {
  std::optional<int64_t> rate_milli;
  std::optional<int64_t> capacity;
  std::optional<int64_t> burst;
  std::optional<int64_t> max_inflight_per_tenant;
};

// What shapes one (queue, tenant) bucket.
struct BucketPolicy {
  int64_t rate_milli = 1000;            // cost units per second × 1000; > 0
  int64_t capacity = 100;               // max queued cost in the bucket
  int64_t burst = 1;                    // cost that may leave back-to-back after idle
  int64_t max_inflight_per_tenant = 0;  // leased jobs per bucket; 0 = no cap
};

struct QueuePolicy {
  BucketPolicy bucket;                   // defaults for every tenant
  int64_t max_inflight = 0;              // leased jobs in the whole queue; 0 = no cap
  int64_t lease_ms = 30000;              // lease length when a worker does not ask
  int64_t max_attempts = 3;              // attempts before a job fails for good
  int64_t retry_backoff_ms = 1000;       // base of full-jitter exponential backoff
  int64_t retry_backoff_max_ms = 60000;  // cap of the backoff
  int64_t default_deadline_ms = 0;       // 0 = jobs have no deadline unless given
  std::map<std::string, TenantOverride> tenants;

  BucketPolicy ForTenant(const std::string& tenant) const;
};

// Parses the flat JSON policy of DESIGN.md; missing fields take their defaults. Refuses
// (400 bad_request, naming the field and its limit) unknown fields, the read-only
// fields of the admin GET (name, version, paused, stats, totals), values of the wrong
// type (a float for an integer field), and values outside the ranges above.
// `check_spans` false skips only the span rule: for policies stored by a release that
// did not have it (the arithmetic saturates, so they stay safe to run).
Result<QueuePolicy> PolicyFromJson(const nlohmann::json& j, bool check_spans = true);
nlohmann::json PolicyToJson(const QueuePolicy& p);

// rate (cost units/s, may be fractional) <-> rate_milli.
double RateFromMilli(int64_t rate_milli);

}  // namespace sluice
