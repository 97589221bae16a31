#include "server/config.h"

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/names.h"
#include "common/strict_json.h"
#include "common/utf8.h"
#include "server/http.h"
#include "server/request_readers.h"

namespace sluice {

using nlohmann::json;

namespace {

Error Bad(const std::string& source, const std::string& why) {
  return MakeError(ErrorCode::kBadRequest, "config " + source + ": " + why);
}

// {"id": "tok_ci", "sha256": "<hex of the whole token>", "scopes": [...], "tenant"?, "queues"?}
Result<TokenRecord> TokenFromConfig(const json& t, const std::string& source, size_t index) {
  const std::string where = "token [" + std::to_string(index) + "]";
  const Error bad = Bad(source, where +
                                    " needs 'id' (a token id: 1-64 of A-Z a-z 0-9 _ -), "
                                    "'sha256' (64 lowercase hex of the whole token) and 'scopes'");
  if (!t.is_object()) return bad;
  if (Status st = RefuseUnknownFields(t, {"id", "sha256", "scopes", "tenant", "queues"});
      !st.ok()) {
    return Bad(source, where + ": " + st.error().detail);
  }
  if (!t.contains("id") || !t["id"].is_string() || !t.contains("sha256") ||
      !t["sha256"].is_string() || !t.contains("scopes") || !t["scopes"].is_array()) {
    return bad;
  }
  if (Status st = CheckName(NameKind::kTokenId, t["id"].get_ref<const std::string&>()); !st.ok()) {
    return Bad(source, where + ": " + st.error().detail);
  }
  // Token creation reads scopes, tenant and queues the same way from the API.
  json request = json::object();
  for (const char* k : {"scopes", "tenant", "queues"}) {
    if (t.contains(k)) request[k] = t[k];
  }
  auto r = ReadTokenRequest(request);
  if (!r.ok())
    return Bad(source,
               "token " + QuoteForMessage(t["id"].get<std::string>()) + ": " + r.error().detail);
  r.value().id = t["id"];
  r.value().secret_hash = t["sha256"];
  const std::string& hash = r.value().secret_hash;
  if (hash.size() != 64 || hash.find_first_not_of("0123456789abcdef") != std::string::npos) {
    return bad;
  }
  return r;
}

}  // namespace

Result<Config> ParseConfig(std::string_view text, const std::string& source) {
  auto parsed = ParseStrictJson(text);
  if (!parsed.ok()) return Bad(source, parsed.error().detail);
  const json& j = parsed.value();
  if (!j.is_object()) return Bad(source, "the file must hold a JSON object");
  if (Status st = RefuseUnknownFields(j, {"queues", "tokens", "limits"}); !st.ok()) {
    return Bad(source, st.error().detail);
  }
  Config c;
  c.source = source;
  if (auto qs = j.find("queues"); qs != j.end()) {
    if (!qs->is_object()) return Bad(source, "'queues' must be an object of name -> policy");
    for (auto& [name, policy_json] : qs->items()) {
      if (Status st = CheckName(NameKind::kQueue, name); !st.ok()) {
        return Bad(source, st.error().detail);
      }
      auto policy = ReadPolicy(policy_json);
      if (!policy.ok()) {
        return Bad(source, "queue " + QuoteForMessage(name) + ": " + policy.error().detail);
      }
      c.queues[name] = policy.value();
    }
  }
  if (auto ts = j.find("tokens"); ts != j.end()) {
    if (!ts->is_array()) return Bad(source, "'tokens' must be an array");
    for (size_t i = 0; i < ts->size(); ++i) {
      auto token = TokenFromConfig((*ts)[i], source, i);
      if (!token.ok()) return token.error();
      for (const TokenRecord& earlier : c.tokens) {
        if (earlier.id == token.value().id) {
          return Bad(source, "token " + QuoteForMessage(earlier.id) + " is declared twice");
        }
      }
      c.tokens.push_back(std::move(token.value()));
    }
  }
  if (auto ls = j.find("limits"); ls != j.end()) {
    auto layers = ReadLayers(*ls);
    if (!layers.ok()) return Bad(source, layers.error().detail);
    c.limits = std::move(layers.value());
  }
  return c;
}

Result<Config> LoadConfig(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return MakeError(ErrorCode::kBadRequest, "cannot read config file " + path);
  std::stringstream text;
  text << in.rdbuf();
  return ParseConfig(text.str(), path);
}

Result<ConfigApplied> ApplyConfig(const Config& config, Store& store, Micros now) {
  ConfigApplied applied;
  std::vector<std::string> keep;
  for (const auto& [name, policy] : config.queues) {
    keep.push_back("queue:" + name);
    auto existing = store.GetQueue(name);
    if (!existing.ok() && existing.error().code != ErrorCode::kNotFound) return existing.error();
    if (existing.ok() && existing.value().managed_by == config.source &&
        PolicyToJson(existing.value().policy) == PolicyToJson(policy)) {
      continue;
    }
    auto put = store.PutQueue(name, policy, now, config.source);
    if (!put.ok()) return put.error();
    if (!existing.ok() || put.value().version != existing.value().version) ++applied.written;
  }
  for (TokenRecord token : config.tokens) {
    auto existing = store.FindToken(token.id);
    if (!existing.ok()) return existing.error();
    if (existing.value()) {
      if (existing.value()->secret_hash != token.secret_hash) {
        return MakeError(ErrorCode::kConflict,
                         "config: token '" + token.id + "' already exists with another secret");
      }
      if (existing.value()->revoked) {
        // The admin's decision stands: a revoked token is never brought back.
        applied.warnings.push_back("token '" + token.id + "' is declared in " + config.source +
                                   " but was revoked through the API; it stays revoked: remove "
                                   "it from the file");
      }
      continue;
    }
    token.created_at = now;
    auto created = store.CreateToken(token);
    if (!created.ok()) return created.error();
    ++applied.written;
  }
  if (config.limits) {
    keep.push_back("limits");
    auto stored = store.GetLimitLayers();
    if (!stored.ok()) return stored.error();
    const std::string want = LayersToJson(*config.limits).dump();
    std::optional<std::string> have;
    if (stored.value()) {
      // Compared as read back, so that the same layers written differently are equal.
      auto parsed = ParseStrictJson(stored.value()->body);
      if (parsed.ok()) {
        if (auto layers = ReadLayers(parsed.value()); layers.ok()) {
          have = LayersToJson(layers.value()).dump();
        }
      }
    }
    // Stored as the file has them (a new version) when they differ; recorded as the
    // file's either way.
    auto put = store.PutLimitLayers(have == want ? stored.value()->body : want, now, config.source);
    if (!put.ok()) return put.error();
    if (have != want) ++applied.written;
  }
  auto released = store.ReleaseFromConfig(keep);
  if (!released.ok()) return released.error();
  applied.released = released.value();
  return applied;
}

}  // namespace sluice
