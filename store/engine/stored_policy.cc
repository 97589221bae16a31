#include "store/engine/stored_policy.h"

#include <mutex>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <unordered_map>

namespace sluice {

std::optional<QueuePolicy> ParseStoredPolicy(const std::string& text) {
  static std::mutex mu;
  static std::unordered_map<std::string, QueuePolicy> parsed;  // guarded by mu
  {
    std::lock_guard lock(mu);
    if (auto it = parsed.find(text); it != parsed.end()) return it->second;
  }
  // Written by PolicyToJson; a policy stored before the span rule still loads.
  auto policy = PolicyFromJson(nlohmann::json::parse(text, nullptr, false), /*check_spans=*/false);
  if (!policy.ok()) return std::nullopt;
  std::lock_guard lock(mu);
  if (parsed.size() >= 1024) parsed.clear();  // bounded: old policies fall out
  parsed.emplace(text, policy.value());
  return policy.value();
}

Result<QueueInfo> QueueFromRow(const QueueRow& row) {
  QueueInfo q;
  q.name = row.name;
  auto policy = ParseStoredPolicy(row.policy);
  if (!policy) {
    return MakeError(ErrorCode::kInternal, "stored policy of " + q.name + " is invalid");
  }
  q.policy = *policy;
  q.version = row.version;
  q.paused = row.paused;
  return q;
}

QueueInfo QueueFromRowOrThrow(const QueueRow& row) {
  auto q = QueueFromRow(row);
  if (!q.ok()) throw std::runtime_error(q.error().detail);
  return q.value();
}

Error UnknownQueue(const std::string& name) {
  return MakeError(ErrorCode::kNotFound, "queue '" + name + "' does not exist");
}

}  // namespace sluice
