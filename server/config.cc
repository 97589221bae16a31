#include "server/config.h"

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "server/http.h"

namespace sluice {

using nlohmann::json;

namespace {

bool AllOf(const std::string& s, size_t min, size_t max, const char* allowed) {
  return s.size() >= min && s.size() <= max && s.find_first_not_of(allowed) == std::string::npos;
}

// {"id": "tok_ci", "sha256": "<hex of the whole token>", "scopes": [...], "tenant"?, "queues"?}
Result<TokenRecord> TokenFromConfig(const json& t) {
  const Error bad = MakeError(ErrorCode::kBadRequest,
                              "config: each token needs 'id' (1-64 of A-Z a-z 0-9 _ -), "
                              "'sha256' (64 lowercase hex of the whole token) and 'scopes'");
  if (!t.is_object()) return bad;
  TokenRecord r;
  if (!t.contains("id") || !t["id"].is_string() || !t.contains("sha256") ||
      !t["sha256"].is_string() || !t.contains("scopes") || !t["scopes"].is_array()) {
    return bad;
  }
  r.id = t["id"];
  r.secret_hash = t["sha256"];
  if (!AllOf(r.id, 1, 64, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-") ||
      !AllOf(r.secret_hash, 64, 64, "0123456789abcdef")) {
    return bad;
  }
  for (const json& s : t["scopes"]) {
    auto scope = s.is_string() ? ParseScope(s.get<std::string>()) : std::nullopt;
    if (!scope)
      return MakeError(ErrorCode::kBadRequest, "config: token '" + r.id + "': unknown scope");
    r.scopes.push_back(*scope);
  }
  if (auto tenant = t.find("tenant"); tenant != t.end() && !tenant->is_null()) {
    if (!tenant->is_string() || tenant->get<std::string>().empty()) return bad;
    r.tenant = tenant->get<std::string>();
  }
  if (auto qs = t.find("queues"); qs != t.end() && !qs->is_null()) {
    if (!qs->is_array()) return bad;
    r.queues = std::vector<std::string>{};
    for (const json& q : *qs) {
      if (!q.is_string() || !ValidQueueName(q.get<std::string>())) return bad;
      r.queues->push_back(q.get<std::string>());
    }
  }
  if (std::find(r.scopes.begin(), r.scopes.end(), Scope::kSubmit) != r.scopes.end() && !r.tenant) {
    return MakeError(ErrorCode::kBadRequest,
                     "config: token '" + r.id + "' has the submit scope and needs a 'tenant'");
  }
  return r;
}

}  // namespace

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
  if (auto ts = j.find("tokens"); ts != j.end()) {
    if (!ts->is_array())
      return MakeError(ErrorCode::kBadRequest, "config: 'tokens' must be an array");
    for (const json& t : *ts) {
      auto token = TokenFromConfig(t);
      if (!token.ok()) return token.error();
      c.tokens.push_back(token.value());
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
  for (TokenRecord token : config.tokens) {
    auto existing = store.FindToken(token.id);
    if (!existing.ok()) return existing.error();
    if (existing.value()) {
      if (existing.value()->secret_hash != token.secret_hash) {
        return MakeError(ErrorCode::kConflict,
                         "config: token '" + token.id + "' already exists with another secret");
      }
      continue;  // declared before (or revoked since: the admin's decision stands)
    }
    token.created_at = now;
    auto created = store.CreateToken(token);
    if (!created.ok()) return created.error();
    ++written;
  }
  return written;
}

}  // namespace sluice
