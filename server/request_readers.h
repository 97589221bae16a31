// The readers of the JSON request bodies (submit, leases, heartbeat, complete, fail, acks,
// token creation, policies) and of the ids in paths: pure functions from the parsed body
// (and the limits they need) to the plain request a route delegates, or the Error to
// answer. Every field is checked against its type, range or name grammar, and unknown
// fields are refused. No store, no authentication, no I/O; nothing throws.
// Pure; thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "shaper/policy.h"
#include "store/store.h"

namespace sluice {

// Most queue names one lease request may name.
inline constexpr size_t kMaxLeaseQueues = 100;
// Longest lease, extension or retry delay a worker may ask for: a day.
inline constexpr int64_t kMaxWorkerMs = 24LL * 3600 * 1000;

// Longest relative deadline, lease or delay a submit may ask for: a year.
inline constexpr int64_t kMaxJobMs = 365LL * 24 * 3600 * 1000;

// POST /v1/queues/{queue}/jobs: {"payload"?: any JSON, "cost"?: 1-1e9, "deadline"?:
// RFC 3339 | "deadline_in_ms"?: 1-kMaxJobMs (not both; <= 0 is deadline_invalid),
// "not_before"?: RFC 3339, "lease_ms"?: 100-kMaxJobMs, "max_attempts"?: 1-1000}. The
// job without queue, tenant, idempotency key and trace context (the route's to set).
Result<NewJob> ReadNewJob(const nlohmann::json& body);

// Most jobs one batch submit (POST /v1/queues/{queue}/jobs:batch) may carry.
inline constexpr size_t kMaxBatchJobs = 1000;

// POST /v1/queues/{queue}/jobs:batch: {"jobs": [1..kMaxBatchJobs items, each as
// ReadNewJob reads a submit, plus "idempotency_key"?: an idempotency key]}. An item
// with a key gets as body_hash the SHA-256 of its other fields in canonical JSON (the
// same item sent again with the same key is a replay). An item in error refuses the
// whole batch, naming the item. Queue, tenant and trace context are the route's to set.
Result<std::vector<NewJob>> ReadBatchJobs(const nlohmann::json& body);

// Most acknowledgements one request (POST /v1/acks, or a lease request) may carry.
inline constexpr size_t kMaxAcks = 100;

// The acks of POST /v1/acks and of a lease request: an array of kMaxAcks items at most,
// each {"id", "lease_id", "outcome": "succeeded" | "failed", "result"?: any JSON
// (succeeded only), "error"?: <= 4096 bytes, "retryable"?: bool, "retry_in_ms"?:
// 0-86400000 (those three failed only)}, no id twice. The id is only required to be a
// string of at most 200 bytes: one sluice could not have issued is the route's to
// answer (per item, not_found). An item in error refuses the whole array.
Result<std::vector<AckItem>> ReadAckItems(const nlohmann::json& acks);

// POST /v1/acks: {"acks": [1..kMaxAcks items, as ReadAckItems]}.
Result<std::vector<AckItem>> ReadAcks(const nlohmann::json& body);

// POST /v1/leases: {"queues": [1..100 queue names], "max_jobs"?: 1-100,
// "wait_ms"?: 0-max_wait_ms, "lease_ms"?: 100-86400000, "worker_id"?: a worker id,
// "acks"?: [0..kMaxAcks items, as ReadAckItems], applied before the lease}.
struct LeaseAsk {
  LeaseRequest lease;
  std::chrono::milliseconds wait{0};
  std::optional<std::vector<AckItem>> acks;  // when the request carried "acks"
};
Result<LeaseAsk> ReadLeaseRequest(const nlohmann::json& body, int64_t max_wait_ms);

// POST /v1/jobs/{id}/heartbeat: {"lease_id", "extend_ms"?: 100-86400000}.
struct HeartbeatAsk {
  std::string lease_id;
  std::optional<int64_t> extend_ms;  // else the job's lease_ms
};
Result<HeartbeatAsk> ReadHeartbeat(const nlohmann::json& body);

// POST /v1/jobs/{id}/complete: {"lease_id", "result"?: any JSON}.
struct CompleteAsk {
  std::string lease_id;
  std::optional<std::string> result;  // the result as JSON text
};
Result<CompleteAsk> ReadComplete(const nlohmann::json& body);

// POST /v1/jobs/{id}/fail: {"lease_id", "error"?: <= 4096 bytes, "retryable"?: bool,
// "retry_in_ms"?: 0-86400000}.
struct FailAsk {
  std::string lease_id;
  FailRequest fail;
};
Result<FailAsk> ReadFail(const nlohmann::json& body);

// POST /v1/admin/tokens: {"scopes": [submit|work|admin, ...], "tenant"?: a tenant name
// (required with submit), "queues"?: [queue names]}. The record's scopes, tenant and
// queues; its id, hash and creation time are the caller's to set.
Result<TokenRecord> ReadTokenRequest(const nlohmann::json& body);

// A policy (PUT of a queue, :simulate, the config file): PolicyFromJson, then every key
// of its `tenants` map checked as a tenant name.
Result<QueuePolicy> ReadPolicy(const nlohmann::json& body);

// Ids in paths are opaque: one that cannot be an id sluice issued is 404, as an
// unknown one is, without a lookup.
Status CheckJobIdInPath(std::string_view id);
Status CheckTokenIdInPath(std::string_view id);

}  // namespace sluice
