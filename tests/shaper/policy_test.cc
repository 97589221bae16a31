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
  SECTION("admin GET output (with version, paused, name, stats) can be PUT back") {
    QueuePolicy p = Parse(json{{"rate", 3}, {"capacity", 12}});
    json shown = PolicyToJson(p);
    shown["version"] = 4;
    shown["paused"] = false;
    shown["name"] = "report-export";
    shown["stats"] = json{{"queued", 1}};
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
