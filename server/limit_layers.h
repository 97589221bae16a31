// The intake-protection layers an operator declares (DESIGN.md "Intake protection
// layers", docs/algorithms.md): what each layer is, how it is read from JSON (the
// config file's "limits" and PUT /v1/admin/limits) and written back, and the layers in
// force when none are declared. The decisions are server/layer_gate.h's; the algorithms
// shaper/limiters'.
// Pure; thread-compatible.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/error.h"
#include "server/route_groups.h"
#include "shaper/limiters/limiter.h"

namespace sluice {

// The identity parts a layer's key is built from, in the order given:
//   token: the authenticated token's public id (never the secret);
//   tenant: the authenticated token's tenant (a token without one has none);
//   ip: the client's address (server/client_ip.h: an IPv6 client's /64);
//   route_group: the group of the request's route.
// A request that lacks a part (no valid token, a token without a tenant) is not counted
// by that layer: authentication refuses the first, and the failed-authentication layer
// counts it per address.
enum class KeyPart { kToken, kTenant, kIp, kRouteGroup };

enum class FailMode {
  kOpen,    // the limiter's state cannot be read or written: admit, and say so in the log
  kClosed,  // ... refuse with 503 storage_unavailable
};

struct Layer {
  std::string name;  // 1-64 of a-z 0-9 _ -: in keys, logs, metrics and RateLimit fields
  Limit limit;
  std::vector<KeyPart> key;            // at least one part, each at most once
  std::vector<RouteGroup> groups;      // what it guards; every group when declared empty
  std::map<RouteGroup, int64_t> cost;  // per group; 1 where not given
  FailMode fail = FailMode::kOpen;

  bool Guards(RouteGroup g) const;
  int64_t CostOf(RouteGroup g) const;
};

// Most layers a policy may declare: each guarded request costs one decision per layer.
inline constexpr size_t kMaxLayers = 16;

// The layers in force until an operator declares any: a concurrency limit on the
// expensive reads (route group `list`: listings, :simulate, metrics), 4 at once per token.
std::vector<Layer> DefaultLayers();

// {"layers": [{"name", "algorithm", "limit", "window_s"?, "burst"?, "key",
//   "route_groups"?, "cost"?, "fail"?}, ...]}: 400 bad_request naming what is wrong.
Result<std::vector<Layer>> ReadLayers(const nlohmann::json& body);
// The layers as ReadLayers reads them (a round trip gives the same layers).
nlohmann::json LayersToJson(const std::vector<Layer>& layers);

std::string_view KeyPartName(KeyPart p);
std::string_view FailModeName(FailMode f);

}  // namespace sluice
