#include "server/limit_layers.h"

#include <algorithm>
#include <cmath>

#include "common/utf8.h"
#include "server/http.h"

namespace sluice {

using nlohmann::json;

namespace {

constexpr std::pair<KeyPart, std::string_view> kKeyParts[] = {
    {KeyPart::kToken, "token"},
    {KeyPart::kTenant, "tenant"},
    {KeyPart::kIp, "ip"},
    {KeyPart::kRouteGroup, "route_group"},
};

Error Bad(const std::string& where, const std::string& why) {
  return MakeError(ErrorCode::kBadRequest, where + ": " + why);
}

bool ValidLayerName(const std::string& s) {
  return !s.empty() && s.size() <= 64 && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
  });
}

// A positive integer of at most kMaxLimitCount, from a JSON number with no fraction.
std::optional<int64_t> Count(const json& v) {
  if (v.is_number_unsigned() || v.is_number_integer()) {
    if (v.is_number_unsigned()) {
      const uint64_t u = v.get<uint64_t>();
      if (u < 1 || u > static_cast<uint64_t>(kMaxLimitCount)) return std::nullopt;
      return static_cast<int64_t>(u);
    }
    const int64_t i = v.get<int64_t>();
    if (i < 1 || i > kMaxLimitCount) return std::nullopt;
    return i;
  }
  return std::nullopt;
}

Result<Layer> ReadLayer(const json& j, const std::string& where) {
  if (!j.is_object()) return Bad(where, "a layer must be a JSON object");
  if (Status st = RefuseUnknownFields(j, {"name", "algorithm", "limit", "window_s", "burst", "key",
                                          "route_groups", "cost", "fail"});
      !st.ok()) {
    return Bad(where, st.error().detail);
  }
  Layer l;
  auto name = j.find("name");
  if (name == j.end() || !name->is_string() || !ValidLayerName(name->get<std::string>())) {
    return Bad(where, "'name' must be 1-64 of a-z 0-9 _ -");
  }
  l.name = name->get<std::string>();
  const std::string at = "layer " + QuoteForMessage(l.name);

  auto algo = j.find("algorithm");
  std::optional<Algorithm> a;
  if (algo != j.end() && algo->is_string()) a = AlgorithmFromName(algo->get<std::string>());
  if (!a) {
    return Bad(at,
               "'algorithm' must be one of fixed_window, sliding_log, sliding_window_counter, "
               "token_bucket, gcra, concurrency");
  }
  l.limit.algorithm = *a;

  auto limit = j.find("limit");
  std::optional<int64_t> n = limit == j.end() ? std::nullopt : Count(*limit);
  if (!n) return Bad(at, "'limit' must be an integer from 1 to " + std::to_string(kMaxLimitCount));
  l.limit.limit = *n;

  const bool concurrency = *a == Algorithm::kConcurrency;
  const bool refills = *a == Algorithm::kTokenBucket || *a == Algorithm::kGcra;
  auto window = j.find("window_s");
  if (concurrency) {
    if (window != j.end()) return Bad(at, "a concurrency layer has no 'window_s'");
  } else {
    const double max_s = static_cast<double>(kMaxLimitWindow / kMicrosPerSecond);
    if (window == j.end() || !window->is_number() || !std::isfinite(window->get<double>()) ||
        window->get<double>() < 1e-3 || window->get<double>() > max_s) {
      return Bad(at, "'window_s' must be a number of seconds from 0.001 to " +
                         std::to_string(static_cast<int64_t>(max_s)));
    }
    l.limit.window = static_cast<Micros>(std::llround(window->get<double>() * kMicrosPerSecond));
  }
  auto burst = j.find("burst");
  if (refills) {
    // A bucket holds one window's worth unless told otherwise.
    l.limit.burst = l.limit.limit;
    if (burst != j.end()) {
      std::optional<int64_t> b = Count(*burst);
      if (!b) {
        return Bad(at, "'burst' must be an integer from 1 to " + std::to_string(kMaxLimitCount));
      }
      l.limit.burst = *b;
    }
  } else if (burst != j.end()) {
    return Bad(at, "only token_bucket and gcra layers have a 'burst'");
  }
  if (std::optional<std::string> why = ValidateLimit(l.limit)) return Bad(at, *why);

  auto key = j.find("key");
  if (key == j.end() || !key->is_array() || key->empty() || key->size() > std::size(kKeyParts)) {
    return Bad(at, "'key' must be a list of 1-4 of token, tenant, ip, route_group");
  }
  for (const json& part : *key) {
    std::optional<KeyPart> p;
    for (const auto& [kp, name_of] : kKeyParts) {
      if (part.is_string() && part.get_ref<const std::string&>() == name_of) p = kp;
    }
    if (!p) return Bad(at, "'key' must be a list of 1-4 of token, tenant, ip, route_group");
    if (std::find(l.key.begin(), l.key.end(), *p) != l.key.end()) {
      return Bad(at, "'key' names " + std::string(KeyPartName(*p)) + " twice");
    }
    l.key.push_back(*p);
  }

  if (auto groups = j.find("route_groups"); groups != j.end()) {
    const std::string want =
        "'route_groups' must be a list of submit, lease, ack, read, list, admin, auth";
    if (!groups->is_array() || groups->size() > 7) return Bad(at, want);
    for (const json& g : *groups) {
      std::optional<RouteGroup> rg;
      if (g.is_string()) rg = RouteGroupFromName(g.get_ref<const std::string&>());
      if (!rg) return Bad(at, want);
      if (std::find(l.groups.begin(), l.groups.end(), *rg) != l.groups.end()) {
        return Bad(at, "'route_groups' names " + std::string(RouteGroupName(*rg)) + " twice");
      }
      l.groups.push_back(*rg);
    }
  }
  if (auto cost = j.find("cost"); cost != j.end()) {
    if (!cost->is_object()) return Bad(at, "'cost' must be an object of route group -> cost");
    for (const auto& [group, value] : cost->items()) {
      std::optional<RouteGroup> rg = RouteGroupFromName(group);
      if (!rg) return Bad(at, "'cost' names no route group: " + QuoteForMessage(group));
      if (!l.Guards(*rg)) {
        return Bad(at, "'cost' names " + group + ", which the layer does not guard");
      }
      std::optional<int64_t> c = Count(value);
      if (!c || *c > l.limit.limit) {
        return Bad(at, "a cost must be an integer from 1 to the layer's limit (" +
                           std::to_string(l.limit.limit) + ")");
      }
      l.cost[*rg] = *c;
    }
  }
  if (auto fail = j.find("fail"); fail != j.end()) {
    if (*fail == "open") {
      l.fail = FailMode::kOpen;
    } else if (*fail == "closed") {
      l.fail = FailMode::kClosed;
    } else {
      return Bad(at, "'fail' must be \"open\" or \"closed\"");
    }
  }
  return l;
}

}  // namespace

bool Layer::Guards(RouteGroup g) const {
  return groups.empty() || std::find(groups.begin(), groups.end(), g) != groups.end();
}

int64_t Layer::CostOf(RouteGroup g) const {
  auto it = cost.find(g);
  return it == cost.end() ? 1 : it->second;
}

std::string_view KeyPartName(KeyPart p) {
  for (const auto& [kp, name] : kKeyParts) {
    if (kp == p) return name;
  }
  return "unknown";
}

std::string_view FailModeName(FailMode f) { return f == FailMode::kOpen ? "open" : "closed"; }

std::vector<Layer> DefaultLayers() {
  Layer expensive;
  expensive.name = "expensive_reads";
  expensive.limit = Limit{Algorithm::kConcurrency, 4, kMicrosPerSecond, 1};
  expensive.key = {KeyPart::kToken};
  expensive.groups = {RouteGroup::kList};
  expensive.fail = FailMode::kOpen;
  return {expensive};
}

Result<std::vector<Layer>> ReadLayers(const json& body) {
  if (!body.is_object()) return Bad("limits", "the body must be a JSON object");
  if (Status st = RefuseUnknownFields(body, {"layers"}); !st.ok()) {
    return Bad("limits", st.error().detail);
  }
  auto layers = body.find("layers");
  if (layers == body.end() || !layers->is_array()) {
    return Bad("limits", "'layers' must be a list of layers");
  }
  if (layers->size() > kMaxLayers) {
    return Bad("limits", "at most " + std::to_string(kMaxLayers) + " layers");
  }
  std::vector<Layer> out;
  for (size_t i = 0; i < layers->size(); ++i) {
    auto l = ReadLayer((*layers)[i], "layer [" + std::to_string(i) + "]");
    if (!l.ok()) return l.error();
    for (const Layer& earlier : out) {
      if (earlier.name == l.value().name) {
        return Bad("limits", "layer " + QuoteForMessage(earlier.name) + " is declared twice");
      }
    }
    out.push_back(std::move(l.value()));
  }
  return out;
}

json LayersToJson(const std::vector<Layer>& layers) {
  json out = json::array();
  for (const Layer& l : layers) {
    json j = {{"name", l.name},
              {"algorithm", AlgorithmName(l.limit.algorithm)},
              {"limit", l.limit.limit}};
    if (l.limit.algorithm != Algorithm::kConcurrency) {
      j["window_s"] = static_cast<double>(l.limit.window) / kMicrosPerSecond;
    }
    if (l.limit.algorithm == Algorithm::kTokenBucket || l.limit.algorithm == Algorithm::kGcra) {
      j["burst"] = l.limit.burst;
    }
    j["key"] = json::array();
    for (KeyPart p : l.key) j["key"].push_back(KeyPartName(p));
    if (!l.groups.empty()) {
      j["route_groups"] = json::array();
      for (RouteGroup g : l.groups) j["route_groups"].push_back(RouteGroupName(g));
    }
    if (!l.cost.empty()) {
      j["cost"] = json::object();
      for (const auto& [g, c] : l.cost) j["cost"][std::string(RouteGroupName(g))] = c;
    }
    j["fail"] = FailModeName(l.fail);
    out.push_back(std::move(j));
  }
  return json{{"layers", out}};
}

}  // namespace sluice
