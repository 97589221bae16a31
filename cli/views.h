// What each sluice CLI command shows: the server's JSON answer turned into aligned text.
// Pure (no HTTP, no I/O): fields missing from an answer show as "-", unknown extra fields
// are ignored, and no view ever shows a field named like a secret except the one answer
// meant to carry it (a freshly created token). Thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace sluice::cli {

// GET /v1/admin/queues → {queues:[QueueToJson...], waiting_leases}
std::string QueuesView(const nlohmann::json& answer);
// GET /v1/admin/queues/{q}/tenants → {queue, tenants:[...]}
std::string TenantsView(const nlohmann::json& answer);
// The "jobs" array of GET /v1/jobs (one page or several).
std::string JobsView(const nlohmann::json& jobs);
// GET /v1/jobs/{id}: one job, one field per line (blocked_by for a queued job).
std::string JobView(const nlohmann::json& job);
// POST /v1/admin/queues/{q}/pause|resume → the queue.
std::string PausedView(const nlohmann::json& queue);
// POST /v1/admin/tokens → {id, token, tenant, scopes, queues}: the one view with a secret.
std::string CreatedTokenView(const nlohmann::json& answer);
// GET /v1/admin/tokens → {tokens:[{id, tenant, scopes, queues, created_at, revoked_at}]}
std::string TokensView(const nlohmann::json& answer);
// DELETE /v1/admin/tokens/{id} → {id, revoked_at}
std::string RevokedView(const nlohmann::json& answer);
// POST /v1/queues/{q}/jobs → the job; `replayed` from the Idempotent-Replayed header.
std::string SubmittedView(const nlohmann::json& job, bool replayed);

// One JSON value as a table cell: strings as they are, numbers via FormatNumber, booleans
// as yes/no, null or missing as "", arrays joined by ",", objects as compact JSON.
std::string Cell(const nlohmann::json& value);
// Cell(j[key]) when j is an object that has key; otherwise "".
std::string Field(const nlohmann::json& j, const char* key);

}  // namespace sluice::cli
