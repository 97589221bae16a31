// Small helpers every handler uses: JSON bodies in, JSON out, and the wire form of
// jobs and queues. Stateless; thread-safe.
#pragma once

#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "common/error.h"
#include "common/names.h"
#include "server/http_types.h"
#include "store/store.h"

namespace sluice {

// Parses the request body as a JSON object ("{}" when the body is empty), strictly
// (common/strict_json.h: no duplicate keys, nothing after the value, bounded depth).
Result<nlohmann::json> ParseJsonObject(const HttpRequest& req);

void RenderJson(HttpResponse& res, int status, const nlohmann::json& body);

// Typed field readers: missing or null → nullopt; anything else that is not a value
// of the field → 400 naming the field (and its range or grammar).
// An integer field takes a JSON integer in [min, max]: no fraction or exponent (1.5,
// 1.0 and 1e3 are refused alike), nothing beyond the range (no wrap-around).
Result<std::optional<int64_t>> IntField(const nlohmann::json& j, const char* name, int64_t min,
                                        int64_t max);
Result<std::optional<std::string>> StringField(const nlohmann::json& j, const char* name,
                                               size_t max_len);
// A string that must be a name of `kind` (common/names.h).
Result<std::optional<std::string>> NameField(const nlohmann::json& j, const char* name,
                                             NameKind kind);
Result<std::optional<Micros>> TimeField(const nlohmann::json& j, const char* name);
Result<std::optional<bool>> BoolField(const nlohmann::json& j, const char* name);

// Ok when every key of the object `j` is in `known`; else 400 "unknown field 'x'"
// (the first one, quoted with QuoteForMessage).
Status RefuseUnknownFields(const nlohmann::json& j, std::initializer_list<std::string_view> known);

// A W3C traceparent: "00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>", ids
// not all zero.
bool ValidTraceparent(const std::string& tp);

nlohmann::json JobToJson(const JobRecord& job);
nlohmann::json LeasedJobToJson(const JobRecord& job);
// The same as JobToJson(job).dump() and LeasedJobToJson(job).dump(), written directly:
// intake and leases render one per job, and building the JSON object (and parsing the
// stored payload to print it again) cost about a tenth of an I/O thread's time.
std::string JobJson(const JobRecord& job);
std::string LeasedJobJson(const JobRecord& job);
// An admitted job as an item of a batch submit's answer, written directly (a batch
// renders up to a thousand): {"estimated_start", "id", "remaining", "replayed"?,
// "reset_s", "state", "status": 202}, the quota fields being the bucket's after it.
std::string BatchAdmittedJson(const JobRecord& job, bool replayed, int64_t remaining,
                              int64_t reset_s);
// A response whose body is the job (JobJson).
void RenderJob(HttpResponse& res, int status, const JobRecord& job);
// A queue: its policy, version, paused, stats {queued, queued_cost, leased} and totals
// {admitted, released, succeeded, failed, expired, lease_timeouts} (the caller may add
// counts kept in memory, such as rejections).
nlohmann::json QueueToJson(const QueueInfo& q);
nlohmann::json TotalsToJson(const Totals& t);
// A token as the admin API lists it: never its secret or hash.
nlohmann::json TokenToJson(const TokenRecord& t);

}  // namespace sluice
