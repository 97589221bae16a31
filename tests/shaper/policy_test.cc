// Queue policies (shaper/policy.h): the flat JSON of DESIGN.md, its defaults and
// validation, per-tenant overrides, and the JSON round trip.
#include "shaper/policy.h"

#include <catch2/catch.hpp>
#include <random>
#include <string>

#include "tests/shaper/virtual_bucket.h"

namespace sluice {
namespace {

using nlohmann::json;
using testing::Uniform;

QueuePolicy Parse(const json& j) {
  Result<QueuePolicy> r = PolicyFromJson(j);
  INFO(j.dump());
  INFO((r.ok() ? std::string() : r.error().detail));
  REQUIRE(r.ok());
  return r.value();
}

void RequireBadRequest(const json& j) {
  Result<QueuePolicy> r = PolicyFromJson(j);
  INFO(j.dump());
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == ErrorCode::kBadRequest);
  CHECK_FALSE(r.error().detail.empty());
}

void RequireSame(const BucketPolicy& a, const BucketPolicy& b) {
  CHECK(a.rate_milli == b.rate_milli);
  CHECK(a.capacity == b.capacity);
  CHECK(a.burst == b.burst);
  CHECK(a.max_inflight_per_tenant == b.max_inflight_per_tenant);
}

void RequireSame(const TenantOverride& a, const TenantOverride& b) {
  CHECK(a.rate_milli == b.rate_milli);
  CHECK(a.capacity == b.capacity);
  CHECK(a.burst == b.burst);
  CHECK(a.max_inflight_per_tenant == b.max_inflight_per_tenant);
}

void RequireSame(const QueuePolicy& a, const QueuePolicy& b) {
  RequireSame(a.bucket, b.bucket);
  CHECK(a.max_inflight == b.max_inflight);
  CHECK(a.lease_ms == b.lease_ms);
  CHECK(a.max_attempts == b.max_attempts);
  CHECK(a.retry_backoff_ms == b.retry_backoff_ms);
  CHECK(a.retry_backoff_max_ms == b.retry_backoff_max_ms);
  CHECK(a.default_deadline_ms == b.default_deadline_ms);
  REQUIRE(a.tenants.size() == b.tenants.size());
  for (const auto& [name, o] : a.tenants) {
    CAPTURE(name);
    REQUIRE(b.tenants.count(name) == 1);
    RequireSame(o, b.tenants.at(name));
  }
}

TEST_CASE("PolicyFromJson: only rate given, everything else defaults", "[policy]") {
  QueuePolicy p = Parse(json{{"rate", 2}});
  CHECK(p.bucket.rate_milli == 2000);
  CHECK(p.bucket.burst == 1);  // DESIGN.md: default 1 = strictly spaced
  CHECK(p.bucket.capacity == 100);
  CHECK(p.bucket.max_inflight_per_tenant == 0);  // no cap
  CHECK(p.max_inflight == 0);
  CHECK(p.lease_ms == 30000);
  CHECK(p.max_attempts == 3);
  CHECK(p.retry_backoff_ms == 1000);       // DESIGN.md: base, default 1000
  CHECK(p.retry_backoff_max_ms == 60000);  // DESIGN.md: default 60000
  CHECK(p.default_deadline_ms == 0);
  CHECK(p.tenants.empty());
}

TEST_CASE("PolicyFromJson: every field is read", "[policy]") {
  QueuePolicy p = Parse(json::parse(R"({
    "rate": 0.5, "capacity": 40, "burst": 4, "max_inflight_per_tenant": 2,
    "max_inflight": 9, "lease_ms": 1500, "max_attempts": 5, "retry_backoff_ms": 250,
    "retry_backoff_max_ms": 8000, "default_deadline_ms": 120000,
    "tenants": {"acme": {"rate": 10, "capacity": 7}}
  })"));
  CHECK(p.bucket.rate_milli == 500);  // fractional rates are exact in milli units
  CHECK(p.bucket.capacity == 40);
  CHECK(p.bucket.burst == 4);
  CHECK(p.bucket.max_inflight_per_tenant == 2);
  CHECK(p.max_inflight == 9);
  CHECK(p.lease_ms == 1500);
  CHECK(p.max_attempts == 5);
  CHECK(p.retry_backoff_ms == 250);
  CHECK(p.retry_backoff_max_ms == 8000);
  CHECK(p.default_deadline_ms == 120000);
  REQUIRE(p.tenants.count("acme") == 1);
  CHECK(p.tenants["acme"].rate_milli == 10000);
  CHECK(p.tenants["acme"].capacity == 7);
  CHECK_FALSE(p.tenants["acme"].burst);
}

TEST_CASE("PolicyFromJson: rate is required and must be > 0", "[policy]") {
  RequireBadRequest(json::object());
  RequireBadRequest(json{{"capacity", 10}});
  RequireBadRequest(json{{"rate", nullptr}});
  RequireBadRequest(json{{"rate", 0}});
  RequireBadRequest(json{{"rate", -1}});
  RequireBadRequest(json{{"rate", -0.5}});
  CHECK(Parse(json{{"rate", 0.001}}).bucket.rate_milli == 1);
}

TEST_CASE("PolicyFromJson: unknown fields, negatives and wrong types are bad_request", "[policy]") {
  SECTION("not an object") {
    RequireBadRequest(json::array({1, 2}));
    RequireBadRequest(json("rate=1"));
    RequireBadRequest(json(nullptr));
  }
  SECTION("unknown fields") {
    RequireBadRequest(json{{"rate", 1}, {"rat", 1}});
    RequireBadRequest(json{{"rate", 1}, {"Capacity", 10}});
    RequireBadRequest(json{{"rate", 1}, {"tenants", {{"acme", {{"lease_ms", 100}}}}}});
    RequireBadRequest(json{{"rate", 1}, {"tenants", {{"acme", {{"colour", "red"}}}}}});
  }
  SECTION("negatives and out-of-range values") {
    for (const char* field :
         {"capacity", "burst", "max_inflight_per_tenant", "max_inflight", "lease_ms",
          "max_attempts", "retry_backoff_ms", "retry_backoff_max_ms", "default_deadline_ms"}) {
      CAPTURE(field);
      RequireBadRequest(json{{"rate", 1}, {field, -1}});
    }
    RequireBadRequest(json{{"rate", 1}, {"capacity", 0}});
    RequireBadRequest(json{{"rate", 1}, {"burst", 0}});
    RequireBadRequest(json{{"rate", 1}, {"max_attempts", 0}});
    RequireBadRequest(json{{"rate", 1}, {"tenants", {{"acme", {{"capacity", -3}}}}}});
    RequireBadRequest(json{{"rate", 1}, {"tenants", {{"acme", {{"rate", 0}}}}}});
  }
  SECTION("wrong types") {
    RequireBadRequest(json{{"rate", "2"}});
    RequireBadRequest(json{{"rate", true}});
    RequireBadRequest(json{{"rate", json::array({2})}});
    RequireBadRequest(json{{"rate", 1}, {"capacity", 1.5}});
    RequireBadRequest(json{{"rate", 1}, {"capacity", "10"}});
    RequireBadRequest(json{{"rate", 1}, {"burst", true}});
    RequireBadRequest(json{{"rate", 1}, {"lease_ms", json::object()}});
    RequireBadRequest(json{{"rate", 1}, {"tenants", json::array()}});
    RequireBadRequest(json{{"rate", 1}, {"tenants", {{"acme", 5}}}});
    RequireBadRequest(json{{"rate", 1}, {"tenants", {{"acme", {{"burst", "2"}}}}}});
  }
  SECTION("an empty tenant name") {
    RequireBadRequest(json{{"rate", 1}, {"tenants", {{"", {{"capacity", 3}}}}}});
  }
}

// The detail of a refusal (RequireBadRequest checks it is a bad_request).
std::string Refusal(const json& j) {
  Result<QueuePolicy> r = PolicyFromJson(j);
  INFO(j.dump());
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == ErrorCode::kBadRequest);
  return r.error().detail;
}

TEST_CASE("PolicyFromJson: read-only fields of the admin GET are refused, by name", "[policy]") {
  // GET /v1/admin/queues/{q} shows these beside the policy; a PUT that sends them back
  // would silently drop them (paused above all: pause and resume have their own routes).
  CHECK(Refusal(json{{"rate", 1}, {"version", 3}}) ==
        "read-only fields: version (a PUT takes policy fields only; pause and resume have "
        "their own routes)");
  std::string all = Refusal(json{{"rate", 1},
                                 {"name", "q"},
                                 {"version", 3},
                                 {"paused", true},
                                 {"stats", json::object()},
                                 {"totals", json::object()}});
  CHECK(all.find("read-only fields: name, version, paused, stats, totals") == 0);
  // Even with an otherwise invalid body, the read-only fields are what is named.
  CHECK(Refusal(json{{"paused", false}}).find("read-only fields: paused") == 0);
  // Inside a tenant override they are simply not per-tenant fields.
  CHECK(Refusal(json{{"rate", 1}, {"tenants", {{"acme", {{"version", 1}}}}}}) ==
        "policy field 'tenants.acme.version' is not a per-tenant field");
}

TEST_CASE("PolicyFromJson: integers are integers, and big unsigned ones do not wrap", "[policy]") {
  // 2^64 - 1 and 2^63 read as int64_t would be -1 and INT64_MIN.
  for (const char* big : {"18446744073709551615", "9223372036854775808"}) {
    for (const char* field :
         {"capacity", "burst", "max_inflight", "max_inflight_per_tenant", "lease_ms",
          "max_attempts", "retry_backoff_ms", "retry_backoff_max_ms", "default_deadline_ms"}) {
      CAPTURE(big, field);
      json j = json::parse(std::string(R"({"rate": 1, ")") + field + "\": " + big + "}");
      REQUIRE(j[field].is_number_unsigned());
      CHECK(Refusal(j).find("must be between") != std::string::npos);
    }
    json t =
        json::parse(std::string(R"({"rate": 1, "tenants": {"a": {"capacity": )") + big + "}}}");
    CHECK(Refusal(t).find("'tenants.a.capacity' must be between") != std::string::npos);
  }
  // The largest int64_t is an integer, just out of range.
  CHECK(Refusal(json::parse(R"({"rate": 1, "capacity": 9223372036854775807})"))
            .find("must be between 1 and 1000000000000") != std::string::npos);
  // Floats, even whole ones, are refused for integer fields.
  for (const char* text : {R"({"rate": 1, "capacity": 5.0})", R"({"rate": 1, "lease_ms": 1e3})",
                           R"({"rate": 1, "max_attempts": 2.5})"}) {
    CAPTURE(text);
    CHECK(Refusal(json::parse(text)).find("must be an integer") != std::string::npos);
  }
}

TEST_CASE("PolicyFromJson: each field's documented range, at both ends", "[policy]") {
  struct Range {
    const char* field;
    int64_t min, max;
  };
  // docs/shaping.md "Ranges". capacity and burst are also bounded by the span rule;
  // at rate 1e9 /s (rate_milli 1e12) that allows all of [1, 1e12].
  const Range ranges[] = {
      {"capacity", 1, 1'000'000'000'000},
      {"burst", 1, 1'000'000'000'000},
      {"max_inflight_per_tenant", 0, 1'000'000'000'000},
      {"max_inflight", 0, 1'000'000'000'000},
      {"lease_ms", 100, 31'536'000'000},
      {"max_attempts", 1, 1000},
      {"retry_backoff_ms", 0, 31'536'000'000},
      {"retry_backoff_max_ms", 0, 31'536'000'000},
      {"default_deadline_ms", 0, 31'536'000'000},
  };
  for (const Range& r : ranges) {
    CAPTURE(r.field);
    Parse(json{{"rate", 1e9}, {r.field, r.min}});
    Parse(json{{"rate", 1e9}, {r.field, r.max}});
    std::string below = Refusal(json{{"rate", 1e9}, {r.field, r.min - 1}});
    std::string above = Refusal(json{{"rate", 1e9}, {r.field, r.max + 1}});
    const std::string named = std::string("policy field '") + r.field + "' must be between " +
                              std::to_string(r.min) + " and " + std::to_string(r.max);
    CHECK(below == named);
    CHECK(above == named);
  }
  CHECK(Parse(json{{"rate", 1e9}}).bucket.rate_milli == 1'000'000'000'000);
  CHECK(Parse(json{{"rate", 0.001}}).bucket.rate_milli == 1);
  CHECK(Refusal(json{{"rate", 1.000001e9}}) ==
        "policy field 'rate' must be between 0.001 and 1e9 per second");
  CHECK(Refusal(json{{"rate", 0.00099}}) ==
        "policy field 'rate' must be between 0.001 and 1e9 per second");
  CHECK(Refusal(json::parse(R"({"rate": 18446744073709551615})")) ==
        "policy field 'rate' must be between 0.001 and 1e9 per second");
}

// 100 years of 365 days, the span a full bucket must drain in (policy.h).
constexpr int64_t kSpan = 3'153'600'000;

TEST_CASE("PolicyFromJson: a full bucket drains, and a burst is tolerated, within 100 years",
          "[policy]") {
  SECTION("the queue's bucket, at the exact limit") {
    // rate 0.001: capacity / rate <= 3153600000 s  <=>  capacity <= 3153600.
    Parse(json{{"rate", 0.001}, {"capacity", 3'153'600}});
    CHECK(Refusal(json{{"rate", 0.001}, {"capacity", 3'153'601}}) ==
          "policy field 'capacity' is too large for rate 0.001: draining a full bucket "
          "(capacity / rate) must take at most 100 years (3153600000 s), so capacity may be at "
          "most 3153600");
    // (burst - 1) / rate: burst up to 3153601.
    Parse(json{{"rate", 0.001}, {"burst", 3'153'601}});
    CHECK(Refusal(json{{"rate", 0.001}, {"burst", 3'153'602}}) ==
          "policy field 'burst' is too large for rate 0.001: the burst tolerance ((burst - 1) / "
          "rate) must take at most 100 years (3153600000 s), so burst may be at most 3153601");
    // A fractional rate: 2.5/s allows 7884000000 units.
    Parse(json{{"rate", 2.5}, {"capacity", 7'884'000'000}});
    CHECK(Refusal(json{{"rate", 2.5}, {"capacity", 7'884'000'001}}).find("at most 7884000000") !=
          std::string::npos);
  }
  SECTION("every tenant, as ForTenant resolves it") {
    // The tenant's own capacity is too large for the rate it inherits.
    CHECK(Refusal(json{{"rate", 0.001}, {"tenants", {{"acme", {{"capacity", 3'153'601}}}}}}) ==
          "policy field 'tenants.acme.capacity' is too large for rate 0.001: draining a full "
          "bucket (capacity / rate) must take at most 100 years (3153600000 s), so capacity may "
          "be at most 3153600");
    // The tenant's own rate is too small for the capacity it inherits: the rate is named.
    CHECK(Refusal(json{{"rate", 1000},
                       {"capacity", 1'000'000'000},
                       {"tenants", {{"slow", {{"rate", 0.001}}}}}}) ==
          "policy field 'tenants.slow.rate' is too small for the inherited capacity 1000000000: "
          "draining a full bucket (capacity / rate) must take at most 100 years (3153600000 s), "
          "so rate must be at least 0.318");
    // ... and for the burst it inherits.
    CHECK(Refusal(json{{"rate", 1000},
                       {"burst", 1'000'000'001},
                       {"tenants", {{"slow", {{"rate", 0.001}}}}}})
              .find("'tenants.slow.rate' is too small for the inherited burst 1000000001") !=
          std::string::npos);
    // The smallest rate the detail names is enough.
    Parse(json{
        {"rate", 1000}, {"capacity", 1'000'000'000}, {"tenants", {{"slow", {{"rate", 0.318}}}}}});
    // Tenants that set both, or neither, are judged like the queue.
    Parse(json{
        {"rate", 0.001},
        {"capacity", 5},
        {"tenants",
         {{"big", {{"rate", 1e9}, {"capacity", 1'000'000'000'000}}}, {"same", json::object()}}}});
  }
  SECTION("property: whatever is accepted keeps both spans within the limit") {
    const uint64_t seed = testing::PropertySeed();
    CAPTURE(seed);
    std::mt19937_64 rng(seed);
    int accepted = 0, refused = 0;
    for (int i = 0; i < 5000; ++i) {
      // Log-uniform values, so every order of magnitude is tried.
      auto log_uniform = [&](int64_t hi) {
        const int digits = Uniform<int>(rng, 0, 12);
        int64_t top = 1;
        for (int d = 0; d < digits; ++d) top *= 10;
        return std::min(hi, Uniform<int64_t>(rng, 1, top));
      };
      json j = {{"rate", static_cast<double>(log_uniform(1'000'000'000'000)) / 1000.0},
                {"capacity", log_uniform(1'000'000'000'000)},
                {"burst", log_uniform(1'000'000'000'000)}};
      json t = json::object();
      if (Uniform<int>(rng, 0, 1))
        t["rate"] = static_cast<double>(log_uniform(1'000'000'000'000)) / 1000.0;
      if (Uniform<int>(rng, 0, 1)) t["capacity"] = log_uniform(1'000'000'000'000);
      if (Uniform<int>(rng, 0, 1)) t["burst"] = log_uniform(1'000'000'000'000);
      j["tenants"] = {{"t", t}};
      CAPTURE(j.dump());
      Result<QueuePolicy> r = PolicyFromJson(j);
      if (!r.ok()) {
        ++refused;
        CHECK(r.error().detail.find("must take at most 100 years") != std::string::npos);
        continue;
      }
      ++accepted;
      for (const BucketPolicy& b : {r.value().bucket, r.value().ForTenant("t")}) {
        CAPTURE(b.rate_milli, b.capacity, b.burst);
        // capacity / rate and (burst - 1) / rate in seconds, exactly.
        REQUIRE(static_cast<testing::Int128>(b.capacity) * 1000 <=
                static_cast<testing::Int128>(kSpan) * b.rate_milli);
        REQUIRE(static_cast<testing::Int128>(b.burst - 1) * 1000 <=
                static_cast<testing::Int128>(kSpan) * b.rate_milli);
      }
    }
    CHECK(accepted > 1000);
    CHECK(refused > 1000);
  }
}

TEST_CASE("ForTenant applies a tenant's overrides and inherits the rest", "[policy]") {
  QueuePolicy p = Parse(json::parse(R"({
    "rate": 2, "capacity": 50, "burst": 3, "max_inflight_per_tenant": 4,
    "tenants": {"acme": {"capacity": 5, "max_inflight_per_tenant": 0},
                "globex": {"rate": 0.25, "burst": 1}}
  })"));
  BucketPolicy acme = p.ForTenant("acme");
  CHECK(acme.rate_milli == 2000);
  CHECK(acme.capacity == 5);
  CHECK(acme.burst == 3);
  CHECK(acme.max_inflight_per_tenant == 0);  // an override to "no cap" is kept

  BucketPolicy globex = p.ForTenant("globex");
  CHECK(globex.rate_milli == 250);
  CHECK(globex.capacity == 50);
  CHECK(globex.burst == 1);
  CHECK(globex.max_inflight_per_tenant == 4);

  RequireSame(p.ForTenant("initech"), p.bucket);
  RequireSame(p.ForTenant(""), p.bucket);
}

TEST_CASE("PolicyToJson round-trips through PolicyFromJson", "[policy][property]") {
  SECTION("a hand-written policy") {
    QueuePolicy p = Parse(json::parse(R"({
      "rate": 12.345, "capacity": 9, "burst": 2, "max_inflight": 3, "lease_ms": 100,
      "max_attempts": 1000, "retry_backoff_ms": 0, "retry_backoff_max_ms": 0,
      "default_deadline_ms": 5, "tenants": {"a": {}, "b": {"rate": 0.001}}
    })"));
    QueuePolicy back = Parse(PolicyToJson(p));
    RequireSame(p, back);
    CHECK(back.bucket.rate_milli == 12345);
  }
  SECTION("admin GET output without its read-only fields can be PUT back") {
    QueuePolicy p = Parse(json{{"rate", 3}, {"capacity", 12}});
    json shown = PolicyToJson(p);
    shown["version"] = 4;
    shown["paused"] = false;
    shown["name"] = "report-export";
    shown["stats"] = json{{"queued", 1}};
    shown["totals"] = json{{"admitted", 1}};
    RequireBadRequest(shown);
    for (const char* n : {"version", "paused", "name", "stats", "totals"}) shown.erase(n);
    RequireSame(p, Parse(shown));
  }
  SECTION("random policies") {
    const uint64_t seed = testing::PropertySeed();
    CAPTURE(seed);
    std::mt19937_64 rng(seed);
    for (int i = 0; i < 500; ++i) {
      QueuePolicy p;
      p.bucket.rate_milli = Uniform<int64_t>(rng, 1, 1'000'000'000'000);
      p.bucket.capacity = Uniform<int64_t>(rng, 1, 1'000'000'000);
      p.bucket.burst = Uniform<int64_t>(rng, 1, 1000);
      p.bucket.max_inflight_per_tenant = Uniform<int64_t>(rng, 0, 100);
      p.max_inflight = Uniform<int64_t>(rng, 0, 100);
      p.lease_ms = Uniform<int64_t>(rng, 100, 86'400'000);
      p.max_attempts = Uniform<int64_t>(rng, 1, 1000);
      p.retry_backoff_ms = Uniform<int64_t>(rng, 0, 100'000);
      p.retry_backoff_max_ms = Uniform<int64_t>(rng, 0, 10'000'000);
      p.default_deadline_ms = Uniform<int64_t>(rng, 0, 10'000'000);
      for (int t = Uniform<int>(rng, 0, 3); t > 0; --t) {
        TenantOverride o;
        if (Uniform<int>(rng, 0, 1)) o.rate_milli = Uniform<int64_t>(rng, 1, 1'000'000'000);
        if (Uniform<int>(rng, 0, 1)) o.capacity = Uniform<int64_t>(rng, 1, 1'000'000);
        if (Uniform<int>(rng, 0, 1)) o.burst = Uniform<int64_t>(rng, 1, 100);
        if (Uniform<int>(rng, 0, 1)) o.max_inflight_per_tenant = Uniform<int64_t>(rng, 0, 100);
        p.tenants["t" + std::to_string(Uniform<int>(rng, 0, 99))] = o;
      }
      CAPTURE(i, PolicyToJson(p).dump());
      // Through text, as the store keeps it.
      RequireSame(p, Parse(json::parse(PolicyToJson(p).dump())));
    }
  }
}

}  // namespace
}  // namespace sluice
