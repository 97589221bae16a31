#include "server/route_groups.h"

#include <array>
#include <utility>

namespace sluice {
namespace {

constexpr std::array<std::pair<RouteGroup, std::string_view>, 7> kNames{{
    {RouteGroup::kSubmit, "submit"},
    {RouteGroup::kLease, "lease"},
    {RouteGroup::kAck, "ack"},
    {RouteGroup::kRead, "read"},
    {RouteGroup::kList, "list"},
    {RouteGroup::kAdmin, "admin"},
    {RouteGroup::kAuth, "auth"},
}};

struct Entry {
  std::string_view method;
  std::string_view pattern;
  RouteGroup group;
};

// Every route of the API. A route added to the router must be added here too (the
// router refuses it otherwise), and to docs/api.md and docs/openapi.yaml (with its
// x-route-group): tests/server/openapi_parity_test.cc holds the three together.
constexpr std::array<Entry, 32> kRoutes{{
    {"POST", "/v1/queues/{}/jobs", RouteGroup::kSubmit},
    {"POST", "/v1/queues/{}/jobs:batch", RouteGroup::kSubmit},
    {"DELETE", "/v1/jobs/{}", RouteGroup::kSubmit},
    {"GET", "/v1/jobs/{}", RouteGroup::kRead},
    {"GET", "/v1/jobs", RouteGroup::kList},
    {"POST", "/v1/leases", RouteGroup::kLease},
    {"POST", "/v1/acks", RouteGroup::kAck},
    {"POST", "/v1/jobs/{}/complete", RouteGroup::kAck},
    {"POST", "/v1/jobs/{}/heartbeat", RouteGroup::kAck},
    {"POST", "/v1/jobs/{}/fail", RouteGroup::kAck},
    {"GET", "/v1/admin/queues", RouteGroup::kList},
    {"GET", "/v1/admin/queues/{}", RouteGroup::kRead},
    {"PUT", "/v1/admin/queues/{}", RouteGroup::kAdmin},
    {"DELETE", "/v1/admin/queues/{}", RouteGroup::kAdmin},
    {"POST", "/v1/admin/queues/{}:simulate", RouteGroup::kList},
    {"GET", "/v1/admin/queues/{}/tenants", RouteGroup::kList},
    {"POST", "/v1/admin/queues/{}/pause", RouteGroup::kAdmin},
    {"POST", "/v1/admin/queues/{}/resume", RouteGroup::kAdmin},
    {"POST", "/v1/admin/jobs/{}/retry", RouteGroup::kAdmin},
    {"POST", "/v1/admin/tokens", RouteGroup::kAuth},
    {"GET", "/v1/admin/tokens", RouteGroup::kAuth},
    {"DELETE", "/v1/admin/tokens/{}", RouteGroup::kAuth},
    {"GET", "/v1/admin/limits", RouteGroup::kRead},
    {"PUT", "/v1/admin/limits", RouteGroup::kAdmin},
    {"GET", "/metrics", RouteGroup::kList},
    {"GET", "/healthz", RouteGroup::kRead},
    {"GET", "/readyz", RouteGroup::kRead},
    {"GET", "/admin", RouteGroup::kRead},
    {"GET", "/admin/", RouteGroup::kRead},
    {"GET", "/admin/app.js", RouteGroup::kRead},
    {"GET", "/admin/style.css", RouteGroup::kRead},
    {"GET", "/v1/openapi.json", RouteGroup::kRead},
}};

}  // namespace

std::string_view RouteGroupName(RouteGroup g) {
  for (const auto& [group, name] : kNames) {
    if (group == g) return name;
  }
  return "unknown";
}

std::optional<RouteGroup> RouteGroupFromName(std::string_view name) {
  for (const auto& [group, n] : kNames) {
    if (n == name) return group;
  }
  return std::nullopt;
}

std::optional<RouteGroup> RouteGroupOf(std::string_view method, std::string_view pattern) {
  for (const Entry& e : kRoutes) {
    if (e.method == method && e.pattern == pattern) return e.group;
  }
  return std::nullopt;
}

}  // namespace sluice
