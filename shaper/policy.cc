#include "shaper/policy.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string_view>

namespace sluice {
namespace {

using nlohmann::json;

Error Bad(const std::string& field, const std::string& why) {
  return MakeError(ErrorCode::kBadRequest, "policy field '" + field + "' " + why);
}

// Reads an integer field in [min, max] if present. A float (even 5.0) is refused, and
// an unsigned JSON number above INT64_MAX is out of range (not wrapped).
std::optional<Error> ReadInt(const json& j, const std::string& prefix, const char* name,
                             int64_t min, int64_t max, std::optional<int64_t>* out) {
  auto it = j.find(name);
  if (it == j.end() || it->is_null()) return std::nullopt;
  const std::string field = prefix + name;
  if (!it->is_number_integer()) return Bad(field, "must be an integer");
  const auto range = [&] {
    return Bad(field, "must be between " + std::to_string(min) + " and " + std::to_string(max));
  };
  if (it->is_number_unsigned() &&
      it->get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    return range();
  }
  const int64_t v = it->get<int64_t>();
  if (v < min || v > max) return range();
  *out = v;
  return std::nullopt;
}

std::optional<Error> ReadRate(const json& j, const std::string& prefix,
                              std::optional<int64_t>* out) {
  auto it = j.find("rate");
  if (it == j.end() || it->is_null()) return std::nullopt;
  if (!it->is_number()) return Bad(prefix + "rate", "must be a number");
  const double r = it->get<double>();
  if (!(r >= 0.001 && r <= 1e9)) {
    return Bad(prefix + "rate", "must be between 0.001 and 1e9 per second");
  }
  *out = std::clamp<int64_t>(std::llround(r * 1000.0), kMinRateMilli, kMaxRateMilli);
  return std::nullopt;
}

std::optional<Error> ReadOverride(const json& j, const std::string& prefix, TenantOverride* o) {
  if (!j.is_object()) return Bad("tenants", "entries must be objects");
  for (auto& [k, v] : j.items()) {
    (void)v;
    if (k != "rate" && k != "capacity" && k != "burst" && k != "max_inflight_per_tenant") {
      return Bad(prefix + k, "is not a per-tenant field");
    }
  }
  if (auto e = ReadRate(j, prefix, &o->rate_milli)) return e;
  if (auto e = ReadInt(j, prefix, "capacity", 1, kMaxPolicyCount, &o->capacity)) return e;
  if (auto e = ReadInt(j, prefix, "burst", 1, kMaxPolicyCount, &o->burst)) return e;
  if (auto e = ReadInt(j, prefix, "max_inflight_per_tenant", 0, kMaxPolicyCount,
                       &o->max_inflight_per_tenant)) {
    return e;
  }
  return std::nullopt;
}

std::string RateText(int64_t rate_milli) {
  std::string s = std::to_string(rate_milli / 1000);
  if (int64_t m = rate_milli % 1000; m != 0) {
    std::string frac = std::to_string(1000 + m).substr(1);
    while (frac.back() == '0') frac.pop_back();
    s += "." + frac;
  }
  return s;
}

// The span limit on one resolved bucket: capacity / rate and (burst - 1) / rate each at
// most kMaxPolicySpanSeconds. `prefix` is "" for the queue's bucket and "tenants.<name>."
// for a tenant's, whose override `o` says which fields it set: a field the tenant set
// is named with its largest allowed value; an inherited one makes the tenant's own
// rate the culprit, named with its smallest allowed value. The field's span of time is
// (value - offset) / rate.
std::optional<Error> CheckSpan(const BucketPolicy& b, const std::string& prefix,
                               const TenantOverride& o, const char* field, int64_t value,
                               int64_t offset, const char* what) {
  const int64_t units = value - offset;
  __extension__ typedef __int128 Int128;
  // units / rate <= span  <=>  units * 1000 <= span * rate_milli, exactly.
  const Int128 limit = static_cast<Int128>(kMaxPolicySpanSeconds) * b.rate_milli;
  if (static_cast<Int128>(units) * 1000 <= limit) return std::nullopt;
  const std::string rule = std::string(what) + " must take at most " +
                           std::to_string(kMaxPolicySpanSeconds / (365LL * 24 * 3600)) +
                           " years (" + std::to_string(kMaxPolicySpanSeconds) + " s)";
  const bool own_field =
      std::string_view(field) == "capacity" ? o.capacity.has_value() : o.burst.has_value();
  if (!prefix.empty() && !own_field) {
    const Int128 min_milli =
        (static_cast<Int128>(units) * 1000 + kMaxPolicySpanSeconds - 1) / kMaxPolicySpanSeconds;
    return Bad(prefix + "rate", "is too small for the inherited " + std::string(field) + " " +
                                    std::to_string(value) + ": " + rule +
                                    ", so rate must be at least " +
                                    RateText(static_cast<int64_t>(min_milli)));
  }
  const int64_t max_units = static_cast<int64_t>(limit / 1000);  // < 3.2e18
  const int64_t allowed = max_units + offset;
  return Bad(prefix + field, "is too large for rate " + RateText(b.rate_milli) + ": " + rule +
                                 ", so " + field + " may be at most " + std::to_string(allowed));
}

std::optional<Error> CheckSpans(const BucketPolicy& b, const std::string& prefix,
                                const TenantOverride& o) {
  if (auto e = CheckSpan(b, prefix, o, "capacity", b.capacity, 0,
                         "draining a full bucket (capacity / rate)")) {
    return e;
  }
  return CheckSpan(b, prefix, o, "burst", b.burst, 1, "the burst tolerance ((burst - 1) / rate)");
}

const char* const kReadOnly[] = {"name", "version", "paused", "stats", "totals", "managed_by"};
const char* const kBucketFields[] = {"rate", "capacity", "burst", "max_inflight_per_tenant"};
const char* const kQueueFields[] = {
    "max_inflight",        "lease_ms", "max_attempts", "retry_backoff_ms", "retry_backoff_max_ms",
    "default_deadline_ms", "tenants"};

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

Result<QueuePolicy> PolicyFromJson(const json& j, bool check_spans) {
  if (!j.is_object()) return MakeError(ErrorCode::kBadRequest, "policy must be a JSON object");
  std::string read_only;
  for (const char* n : kReadOnly) {
    if (j.contains(n)) read_only += (read_only.empty() ? "" : ", ") + std::string(n);
  }
  if (!read_only.empty()) {
    return MakeError(ErrorCode::kBadRequest,
                     "read-only fields: " + read_only +
                         " (a PUT takes policy fields only; pause and resume have their own "
                         "routes)");
  }
  json bucket = json::object();
  for (auto& [k, v] : j.items()) {
    bool known = false;
    for (const char* n : kBucketFields) {
      if (k == n) {
        known = true;
        bucket[k] = v;
      }
    }
    for (const char* n : kQueueFields) known = known || k == n;
    if (!known) return Bad(k, "is not a policy field");
  }
  QueuePolicy p;
  TenantOverride base;
  if (auto e = ReadOverride(bucket, "", &base)) return *e;
  if (!base.rate_milli) return Bad("rate", "is required");
  p.bucket.rate_milli = *base.rate_milli;
  if (base.capacity) p.bucket.capacity = *base.capacity;
  if (base.burst) p.bucket.burst = *base.burst;
  if (base.max_inflight_per_tenant) {
    p.bucket.max_inflight_per_tenant = *base.max_inflight_per_tenant;
  }
  if (check_spans) {
    if (auto e = CheckSpans(p.bucket, "", base)) return *e;
  }

  struct QueueInt {
    const char* name;
    int64_t min, max;
    int64_t* into;
  };
  const QueueInt ints[] = {
      {"max_inflight", 0, kMaxPolicyCount, &p.max_inflight},
      {"lease_ms", kMinLeaseMs, kMaxPolicyMs, &p.lease_ms},
      {"max_attempts", 1, kMaxAttempts, &p.max_attempts},
      {"retry_backoff_ms", 0, kMaxPolicyMs, &p.retry_backoff_ms},
      {"retry_backoff_max_ms", 0, kMaxPolicyMs, &p.retry_backoff_max_ms},
      {"default_deadline_ms", 0, kMaxPolicyMs, &p.default_deadline_ms},
  };
  for (const QueueInt& f : ints) {
    std::optional<int64_t> v;
    if (auto e = ReadInt(j, "", f.name, f.min, f.max, &v)) return *e;
    if (v) *f.into = *v;
  }

  if (auto it = j.find("tenants"); it != j.end() && !it->is_null()) {
    if (!it->is_object()) return Bad("tenants", "must be an object of tenant -> overrides");
    for (auto& [tenant, o] : it->items()) {
      if (tenant.empty()) return Bad("tenants", "names must not be empty");
      const std::string prefix = "tenants." + tenant + ".";
      TenantOverride ov;
      if (auto e = ReadOverride(o, prefix, &ov)) return *e;
      p.tenants[tenant] = ov;
      if (check_spans) {
        if (auto e = CheckSpans(p.ForTenant(tenant), prefix, ov)) return *e;
      }
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
