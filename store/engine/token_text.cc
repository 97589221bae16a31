#include "store/engine/token_text.h"

#include <nlohmann/json.hpp>

namespace sluice {

using nlohmann::json;

std::string ScopesToJson(const std::vector<Scope>& scopes) {
  json a = json::array();
  for (Scope s : scopes) a.push_back(ScopeName(s));
  return a.dump();
}

std::vector<Scope> ScopesFromJson(const std::string& text) {
  std::vector<Scope> out;
  json a = json::parse(text, nullptr, false);
  if (!a.is_array()) return out;
  for (const auto& name : a) {
    if (!name.is_string()) continue;
    if (auto sc = ParseScope(name.get<std::string>())) out.push_back(*sc);
  }
  return out;
}

std::optional<std::string> QueuesToJson(const std::optional<std::vector<std::string>>& queues) {
  if (!queues) return std::nullopt;
  return json(*queues).dump();
}

std::optional<std::vector<std::string>> QueuesFromJson(const std::optional<std::string>& text) {
  if (!text) return std::nullopt;
  json a = json::parse(*text, nullptr, false);
  if (!a.is_array()) return std::nullopt;
  std::vector<std::string> out;
  for (const auto& q : a) {
    if (q.is_string()) out.push_back(q.get<std::string>());
  }
  return out;
}

}  // namespace sluice
