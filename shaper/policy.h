// A queue's shaping policy (DESIGN.md "Shaping semantics") and its JSON form.
// Rates are integers in milli-cost-units per second so that schedules are exact.
// Plain values; thread-compatible.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "common/error.h"

namespace sluice {

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

// Parses the flat JSON policy of DESIGN.md; missing fields take their defaults.
Result<QueuePolicy> PolicyFromJson(const nlohmann::json& j);
nlohmann::json PolicyToJson(const QueuePolicy& p);

// rate (cost units/s, may be fractional) <-> rate_milli.
double RateFromMilli(int64_t rate_milli);

}  // namespace sluice
