// Route groups: every route of the API by what it costs, for the intake-protection
// layers (DESIGN.md "Intake protection layers"): a layer guards groups, never URLs, so
// an alias or a new route cannot slip past it. Each (method, pattern) the router
// registers belongs to exactly one group; Router::Add refuses a route no group names,
// and HEAD is its GET route's. Pure; thread-safe.
#pragma once

#include <optional>
#include <string_view>

namespace sluice {

enum class RouteGroup {
  kSubmit,  // a tenant's writes: submit, cancel
  kLease,   // a worker's lease request (long-poll)
  kAck,     // a worker's acks: complete, fail, heartbeat, batch acks
  kRead,    // one resource: a job, a queue, health, the dashboard's files
  kList,    // whole listings and whole-backlog reads: jobs, queues, tenants, :simulate, metrics
  kAdmin,   // changes to queues and jobs by an admin
  kAuth,    // credential routes: tokens created, listed, revoked
};

// "submit", "lease", "ack", "read", "list", "admin", "auth".
std::string_view RouteGroupName(RouteGroup g);
std::optional<RouteGroup> RouteGroupFromName(std::string_view name);

// The group of a route as registered: `pattern` with its "{}" captures (router.h).
// Empty for a route no group names.
std::optional<RouteGroup> RouteGroupOf(std::string_view method, std::string_view pattern);

}  // namespace sluice
