// Small helpers every handler uses: JSON bodies in, JSON out, and the wire form of
// jobs and queues. Stateless; thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "common/error.h"
#include "server/http_types.h"
#include "store/store.h"

namespace sluice {

// Parses the request body as a JSON object ("{}" when the body is empty).
Result<nlohmann::json> ParseJsonObject(const HttpRequest& req);

void RenderJson(HttpResponse& res, int status, const nlohmann::json& body);

// Typed field readers: missing → nullopt; wrong type → 400 naming the field.
Result<std::optional<int64_t>> IntField(const nlohmann::json& j, const char* name, int64_t min,
                                        int64_t max);
Result<std::optional<std::string>> StringField(const nlohmann::json& j, const char* name,
                                               size_t max_len);
Result<std::optional<Micros>> TimeField(const nlohmann::json& j, const char* name);
Result<std::optional<bool>> BoolField(const nlohmann::json& j, const char* name);

// Queue names: 1-64 of [A-Za-z0-9._-].
bool ValidQueueName(const std::string& name);

nlohmann::json JobToJson(const JobRecord& job);
nlohmann::json LeasedJobToJson(const JobRecord& job);
nlohmann::json QueueToJson(const QueueInfo& q);

}  // namespace sluice
