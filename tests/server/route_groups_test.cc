// Route groups (issue 17): every route the server registers, aliases included, is in
// exactly one group, the one its cost calls for; a route no group names cannot be
// registered.
#include "server/route_groups.h"

#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>
#include <map>
#include <set>
#include <stdexcept>

#include "server/app.h"
#include "server/auth.h"
#include "server/dispatcher.h"
#include "server/metrics.h"
#include "server/router.h"
#include "tests/store/store_fixture.h"

namespace sluice::testing {
namespace {

TEST_CASE("route group names round-trip", "[route_groups]") {
  std::set<std::string_view> names;
  for (RouteGroup g : {RouteGroup::kSubmit, RouteGroup::kLease, RouteGroup::kAck, RouteGroup::kRead,
                       RouteGroup::kList, RouteGroup::kAdmin, RouteGroup::kAuth}) {
    REQUIRE(RouteGroupFromName(RouteGroupName(g)) == g);
    names.insert(RouteGroupName(g));
  }
  REQUIRE(names.size() == 7);
  REQUIRE_FALSE(RouteGroupFromName("jobs").has_value());
}

TEST_CASE("every registered route is in the group its cost calls for", "[route_groups]") {
  StoreFixture store;
  boost::asio::io_context io;
  Authenticator auth(store.store(), "route-groups-admin");
  Dispatcher dispatcher(io, store.store(), store.clock());
  Metrics metrics;
  App app{store.store(), auth, dispatcher, store.clock(), metrics};
  Router router;
  RegisterRoutes(router, app);

  // What each kind of route must be, whatever its URL says.
  const std::map<std::pair<std::string, std::string>, RouteGroup> expected = {
      {{"POST", "/v1/queues/{}/jobs"}, RouteGroup::kSubmit},
      {{"POST", "/v1/queues/{}/jobs:batch"}, RouteGroup::kSubmit},
      {{"DELETE", "/v1/jobs/{}"}, RouteGroup::kSubmit},
      {{"POST", "/v1/leases"}, RouteGroup::kLease},
      {{"POST", "/v1/acks"}, RouteGroup::kAck},
      {{"POST", "/v1/jobs/{}/complete"}, RouteGroup::kAck},
      {{"POST", "/v1/jobs/{}/fail"}, RouteGroup::kAck},
      {{"POST", "/v1/jobs/{}/heartbeat"}, RouteGroup::kAck},
      {{"GET", "/v1/jobs/{}"}, RouteGroup::kRead},
      {{"GET", "/v1/jobs"}, RouteGroup::kList},
      {{"GET", "/v1/admin/queues"}, RouteGroup::kList},
      {{"GET", "/v1/admin/queues/{}/tenants"}, RouteGroup::kList},
      {{"POST", "/v1/admin/queues/{}:simulate"}, RouteGroup::kList},
      {{"GET", "/metrics"}, RouteGroup::kList},
      {{"POST", "/v1/admin/tokens"}, RouteGroup::kAuth},
      {{"GET", "/v1/admin/tokens"}, RouteGroup::kAuth},
      {{"DELETE", "/v1/admin/tokens/{}"}, RouteGroup::kAuth},
      {{"PUT", "/v1/admin/queues/{}"}, RouteGroup::kAdmin},
      {{"DELETE", "/v1/admin/queues/{}"}, RouteGroup::kAdmin},
      {{"POST", "/v1/admin/queues/{}/pause"}, RouteGroup::kAdmin},
      {{"POST", "/v1/admin/queues/{}/resume"}, RouteGroup::kAdmin},
      {{"POST", "/v1/admin/jobs/{}/retry"}, RouteGroup::kAdmin},
      {{"PUT", "/v1/admin/limits"}, RouteGroup::kAdmin},
      {{"GET", "/v1/admin/limits"}, RouteGroup::kRead},
  };
  size_t checked = 0;
  for (const Router::Route& r : router.routes()) {
    CAPTURE(r.method, r.pattern);
    REQUIRE(RouteGroupOf(r.method, r.pattern) == r.group);
    if (auto it = expected.find({r.method, r.pattern}); it != expected.end()) {
      CHECK(r.group == it->second);
      ++checked;
    } else {
      // The rest are single reads: health, a queue, the dashboard's files.
      CHECK(r.method == "GET");
      CHECK(r.group == RouteGroup::kRead);
    }
  }
  CHECK(checked == expected.size());  // every expected route is registered

  // An alias finds its route, so its group: HEAD is GET's, a percent-encoded path the
  // decoded one's.
  const Router::Route* head = nullptr;
  std::vector<std::string> captures;
  REQUIRE(router.Find("HEAD", "/v1/jobs", &head, &captures) == Router::Found::kRoute);
  CHECK(head->group == RouteGroup::kList);
  const Router::Route* encoded = nullptr;
  REQUIRE(router.Find("POST", "/v1/admin/queues/q%3Ax:simulate", &encoded, &captures) ==
          Router::Found::kRoute);
  CHECK(encoded->group == RouteGroup::kList);
}

TEST_CASE("a route in no group cannot be registered", "[route_groups]") {
  Router router;
  auto none = [](const HttpRequest&, HttpResponse&) {};
  REQUIRE_THROWS_AS(router.Add("GET", "/v1/unlisted", none), std::logic_error);
  REQUIRE_THROWS_AS(router.Add("PATCH", "/v1/jobs/{}", none), std::logic_error);
  REQUIRE(router.routes().empty());
}

}  // namespace
}  // namespace sluice::testing
