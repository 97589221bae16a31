#include "server/config.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "server/http.h"

namespace sluice {

using nlohmann::json;

Result<Config> LoadConfig(const std::string& path) {
  std::ifstream in(path);
  if (!in) return MakeError(ErrorCode::kBadRequest, "cannot read config file " + path);
  std::stringstream text;
  text << in.rdbuf();
  json j = json::parse(text.str(), nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return MakeError(ErrorCode::kBadRequest, "config file " + path + " is not a JSON object");
  }
  Config c;
  if (auto qs = j.find("queues"); qs != j.end()) {
    if (!qs->is_object())
      return MakeError(ErrorCode::kBadRequest, "config: 'queues' must be an object");
    for (auto& [name, policy_json] : qs->items()) {
      if (!ValidQueueName(name)) {
        return MakeError(ErrorCode::kBadRequest, "config: invalid queue name '" + name + "'");
      }
      auto policy = PolicyFromJson(policy_json);
      if (!policy.ok()) {
        return MakeError(ErrorCode::kBadRequest,
                         "config: queue '" + name + "': " + policy.error().detail);
      }
      c.queues[name] = policy.value();
    }
  }
  return c;
}

Result<int> ApplyConfig(const Config& config, Store& store, Micros now) {
  int written = 0;
  for (const auto& [name, policy] : config.queues) {
    auto existing = store.GetQueue(name);
    if (existing.ok() && PolicyToJson(existing.value().policy) == PolicyToJson(policy)) continue;
    if (!existing.ok() && existing.error().code != ErrorCode::kNotFound) return existing.error();
    auto put = store.PutQueue(name, policy, now);
    if (!put.ok()) return put.error();
    ++written;
  }
  return written;
}

}  // namespace sluice
