#include "shaper/policy.h"

#include <cmath>

namespace sluice {
namespace {

using nlohmann::json;

Error Bad(const std::string& field, const std::string& why) {
  return MakeError(ErrorCode::kBadRequest, "policy field '" + field + "' " + why);
}

// Reads an integer field in [min, max] if present. Returns an error message or "".
std::optional<Error> ReadInt(const json& j, const char* name, int64_t min, int64_t max,
                             std::optional<int64_t>* out) {
  auto it = j.find(name);
  if (it == j.end() || it->is_null()) return std::nullopt;
  if (!it->is_number_integer()) return Bad(name, "must be an integer");
  int64_t v = it->get<int64_t>();
  if (v < min || v > max) {
    return Bad(name, "must be between " + std::to_string(min) + " and " + std::to_string(max));
  }
  *out = v;
  return std::nullopt;
}

std::optional<Error> ReadRate(const json& j, std::optional<int64_t>* out) {
  auto it = j.find("rate");
  if (it == j.end() || it->is_null()) return std::nullopt;
  if (!it->is_number()) return Bad("rate", "must be a number");
  double r = it->get<double>();
  if (!(r >= 0.001 && r <= 1e9)) return Bad("rate", "must be between 0.001 and 1e9 per second");
  *out = std::llround(r * 1000.0);
  return std::nullopt;
}

constexpr int64_t kMaxCount = 1'000'000'000'000LL;
constexpr int64_t kMaxMs = 365LL * 24 * 3600 * 1000;

std::optional<Error> ReadOverride(const json& j, TenantOverride* o) {
  if (!j.is_object()) return Bad("tenants", "entries must be objects");
  for (auto& [k, v] : j.items()) {
    (void)v;
    if (k != "rate" && k != "capacity" && k != "burst" && k != "max_inflight_per_tenant") {
      return Bad("tenants." + k, "is not a per-tenant field");
    }
  }
  if (auto e = ReadRate(j, &o->rate_milli)) return e;
  if (auto e = ReadInt(j, "capacity", 1, kMaxCount, &o->capacity)) return e;
  if (auto e = ReadInt(j, "burst", 1, kMaxCount, &o->burst)) return e;
  if (auto e = ReadInt(j, "max_inflight_per_tenant", 0, kMaxCount, &o->max_inflight_per_tenant))
    return e;
  return std::nullopt;
}

}  // namespace

BucketPolicy QueuePolicy::ForTenant(const std::string& tenant) const {
  BucketPolicy b = bucket;
  auto it = tenants.find(tenant);
  if (it == tenants.end()) return b;
  const TenantOverride& o = it->second;
  if (o.rate_milli) b.rate_milli = *o.rate_milli;
  if (o.capacity) b.capacity = *o.capacity;
  if (o.burst) b.burst = *o.burst;
  if (o.max_inflight_per_tenant) b.max_inflight_per_tenant = *o.max_inflight_per_tenant;
  return b;
}

Result<QueuePolicy> PolicyFromJson(const json& j) {
  if (!j.is_object()) return MakeError(ErrorCode::kBadRequest, "policy must be a JSON object");
  static const char* kKnown[] = {"rate",
                                 "capacity",
                                 "burst",
                                 "max_inflight_per_tenant",
                                 "max_inflight",
                                 "lease_ms",
                                 "max_attempts",
                                 "retry_backoff_ms",
                                 "retry_backoff_max_ms",
                                 "default_deadline_ms",
                                 "tenants",
                                 "version",
                                 "paused",
                                 "name",
                                 "stats"};
  for (auto& [k, v] : j.items()) {
    (void)v;
    bool known = false;
    for (const char* n : kKnown) known = known || k == n;
    if (!known) return Bad(k, "is not a policy field");
  }
  QueuePolicy p;
  TenantOverride base;
  if (auto e = ReadOverride(
          [&] {
            json b = json::object();
            for (const char* n : {"rate", "capacity", "burst", "max_inflight_per_tenant"}) {
              if (j.contains(n)) b[n] = j[n];
            }
            return b;
          }(),
          &base)) {
    return *e;
  }
  if (!base.rate_milli) return Bad("rate", "is required");
  p.bucket.rate_milli = *base.rate_milli;
  if (base.capacity) p.bucket.capacity = *base.capacity;
  if (base.burst) p.bucket.burst = *base.burst;
  if (base.max_inflight_per_tenant)
    p.bucket.max_inflight_per_tenant = *base.max_inflight_per_tenant;

  std::optional<int64_t> v;
  if (auto e = ReadInt(j, "max_inflight", 0, kMaxCount, &v)) return *e;
  if (v) p.max_inflight = *v;
  v.reset();
  if (auto e = ReadInt(j, "lease_ms", 100, kMaxMs, &v)) return *e;
  if (v) p.lease_ms = *v;
  v.reset();
  if (auto e = ReadInt(j, "max_attempts", 1, 1000, &v)) return *e;
  if (v) p.max_attempts = *v;
  v.reset();
  if (auto e = ReadInt(j, "retry_backoff_ms", 0, kMaxMs, &v)) return *e;
  if (v) p.retry_backoff_ms = *v;
  v.reset();
  if (auto e = ReadInt(j, "retry_backoff_max_ms", 0, kMaxMs, &v)) return *e;
  if (v) p.retry_backoff_max_ms = *v;
  v.reset();
  if (auto e = ReadInt(j, "default_deadline_ms", 0, kMaxMs, &v)) return *e;
  if (v) p.default_deadline_ms = *v;

  if (auto it = j.find("tenants"); it != j.end() && !it->is_null()) {
    if (!it->is_object()) return Bad("tenants", "must be an object of tenant -> overrides");
    for (auto& [tenant, o] : it->items()) {
      if (tenant.empty()) return Bad("tenants", "names must not be empty");
      TenantOverride ov;
      if (auto e = ReadOverride(o, &ov)) return *e;
      p.tenants[tenant] = ov;
    }
  }
  return p;
}

double RateFromMilli(int64_t rate_milli) { return static_cast<double>(rate_milli) / 1000.0; }

json PolicyToJson(const QueuePolicy& p) {
  json j = {{"rate", RateFromMilli(p.bucket.rate_milli)},
            {"capacity", p.bucket.capacity},
            {"burst", p.bucket.burst},
            {"max_inflight_per_tenant", p.bucket.max_inflight_per_tenant},
            {"max_inflight", p.max_inflight},
            {"lease_ms", p.lease_ms},
            {"max_attempts", p.max_attempts},
            {"retry_backoff_ms", p.retry_backoff_ms},
            {"retry_backoff_max_ms", p.retry_backoff_max_ms},
            {"default_deadline_ms", p.default_deadline_ms}};
  json tenants = json::object();
  for (const auto& [name, o] : p.tenants) {
    json t = json::object();
    if (o.rate_milli) t["rate"] = RateFromMilli(*o.rate_milli);
    if (o.capacity) t["capacity"] = *o.capacity;
    if (o.burst) t["burst"] = *o.burst;
    if (o.max_inflight_per_tenant) t["max_inflight_per_tenant"] = *o.max_inflight_per_tenant;
    tenants[name] = t;
  }
  j["tenants"] = tenants;
  return j;
}

}  // namespace sluice
