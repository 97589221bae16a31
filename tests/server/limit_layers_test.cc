// The intake layers' reader (server/limit_layers.h): what an operator may declare, the
// defaults, and the refusals that name what is wrong.
#include "server/limit_layers.h"

#include <catch2/catch.hpp>

namespace sluice {
namespace {

using nlohmann::json;

json One(json layer) { return json{{"layers", json::array({std::move(layer)})}}; }

std::string Refusal(const json& body) {
  auto r = ReadLayers(body);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == ErrorCode::kBadRequest);
  return r.error().detail;
}

TEST_CASE("a layer reads with its defaults and reads back from its own JSON", "[layers]") {
  auto r = ReadLayers(One({{"name", "per_token"},
                           {"algorithm", "token_bucket"},
                           {"limit", 100},
                           {"window_s", 0.5},
                           {"key", {"token", "route_group"}},
                           {"route_groups", {"submit", "lease"}},
                           {"cost", {{"lease", 5}}}}));
  REQUIRE(r.ok());
  const Layer& l = r.value().at(0);
  CHECK(l.limit.algorithm == Algorithm::kTokenBucket);
  CHECK(l.limit.window == 500000);
  CHECK(l.limit.burst == 100);  // a window's worth unless told
  CHECK(l.fail == FailMode::kOpen);
  CHECK(l.Guards(RouteGroup::kSubmit));
  CHECK_FALSE(l.Guards(RouteGroup::kAuth));
  CHECK(l.CostOf(RouteGroup::kLease) == 5);
  CHECK(l.CostOf(RouteGroup::kSubmit) == 1);
  const json printed = LayersToJson(r.value());
  auto again = ReadLayers(printed);
  REQUIRE(again.ok());
  CHECK(LayersToJson(again.value()) == printed);
}

TEST_CASE("a layer without route groups guards every group", "[layers]") {
  auto r = ReadLayers(One({{"name", "per_ip"},
                           {"algorithm", "fixed_window"},
                           {"limit", 10},
                           {"window_s", 60},
                           {"key", {"ip"}},
                           {"fail", "closed"}}));
  REQUIRE(r.ok());
  for (RouteGroup g : {RouteGroup::kSubmit, RouteGroup::kLease, RouteGroup::kAck, RouteGroup::kRead,
                       RouteGroup::kList, RouteGroup::kAdmin, RouteGroup::kAuth}) {
    CHECK(r.value()[0].Guards(g));
  }
  CHECK(r.value()[0].fail == FailMode::kClosed);
}

TEST_CASE("the default layers: a concurrency limit on the expensive reads", "[layers]") {
  const std::vector<Layer> d = DefaultLayers();
  REQUIRE(d.size() == 1);
  CHECK(d[0].limit.algorithm == Algorithm::kConcurrency);
  CHECK(d[0].Guards(RouteGroup::kList));
  CHECK_FALSE(d[0].Guards(RouteGroup::kSubmit));
  auto again = ReadLayers(LayersToJson(d));
  REQUIRE(again.ok());
  CHECK(LayersToJson(again.value()) == LayersToJson(d));
}

TEST_CASE("bad layers are refused, naming what is wrong", "[layers]") {
  const json good = {{"name", "a"},
                     {"algorithm", "fixed_window"},
                     {"limit", 10},
                     {"window_s", 60},
                     {"key", {"ip"}}};
  auto with = [&](const std::string& field, json value) {
    json l = good;
    l[field] = std::move(value);
    return One(l);
  };
  auto without = [&](const std::string& field) {
    json l = good;
    l.erase(field);
    return One(l);
  };
  CHECK_THAT(Refusal(with("name", "Bad Name")), Catch::Contains("'name'"));
  CHECK_THAT(Refusal(with("algorithm", "leaky")), Catch::Contains("'algorithm'"));
  CHECK_THAT(Refusal(with("limit", 0)), Catch::Contains("'limit'"));
  CHECK_THAT(Refusal(with("limit", 1.5)), Catch::Contains("'limit'"));
  CHECK_THAT(Refusal(without("window_s")), Catch::Contains("'window_s'"));
  CHECK_THAT(Refusal(with("window_s", 0)), Catch::Contains("'window_s'"));
  CHECK_THAT(Refusal(with("burst", 5)), Catch::Contains("burst"));
  CHECK_THAT(Refusal(with("key", json::array())), Catch::Contains("'key'"));
  CHECK_THAT(Refusal(with("key", {"ip", "ip"})), Catch::Contains("twice"));
  CHECK_THAT(Refusal(with("key", {"password"})), Catch::Contains("'key'"));
  CHECK_THAT(Refusal(with("route_groups", {"everything"})), Catch::Contains("'route_groups'"));
  CHECK_THAT(Refusal(with("fail", "maybe")), Catch::Contains("'fail'"));
  CHECK_THAT(Refusal(with("cost", {{"list", 11}})), Catch::Contains("cost"));
  CHECK_THAT(Refusal(with("extra", 1)), Catch::Contains("extra"));
  // As a request body reads them: a parsed 0 is an unsigned number, and still refused.
  CHECK_THAT(Refusal(with("limit", json::parse("0"))), Catch::Contains("'limit'"));
  CHECK_THAT(Refusal(with("cost", json::parse(R"({"list":0})"))), Catch::Contains("cost"));
  json bucket = good;
  bucket["algorithm"] = "token_bucket";
  bucket["burst"] = json::parse("0");
  CHECK_THAT(Refusal(One(bucket)), Catch::Contains("'burst'"));
  json conc = good;
  conc["algorithm"] = "concurrency";
  CHECK_THAT(Refusal(One(conc)), Catch::Contains("no 'window_s'"));
  json guarded = good;
  guarded["route_groups"] = {"submit"};
  guarded["cost"] = {{"list", 2}};
  CHECK_THAT(Refusal(One(guarded)), Catch::Contains("does not guard"));
  CHECK_THAT(Refusal(json{{"layers", {good, good}}}), Catch::Contains("declared twice"));
  json many = json::array();
  for (size_t i = 0; i <= kMaxLayers; ++i) {
    json l = good;
    l["name"] = "l" + std::to_string(i);
    many.push_back(l);
  }
  CHECK_THAT(Refusal(json{{"layers", many}}), Catch::Contains("at most"));
  CHECK_THAT(Refusal(json::array()), Catch::Contains("object"));
}

}  // namespace
}  // namespace sluice
