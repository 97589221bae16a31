// All SQL of sluice lives in this file, as named statements below.
#include "store/sqlite_store.h"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <unordered_map>

#include "common/random.h"
#include "shaper/backoff.h"
#include "shaper/dispatch.h"
#include "store/schema_sql.h"
#include "store/wal_vfs.h"

namespace sluice {
namespace {

using nlohmann::json;
using sqlite::Db;
using sqlite::Stmt;

// ---- Named statements ------------------------------------------------------------

#define SLUICE_JOB_COLUMNS                                                                     \
  "id, queue, tenant, state, payload, cost, attempt, max_attempts, lease_ms, policy_version, " \
  "created_at, not_before, available_at, deadline_at, estimated_start, lease_id, "             \
  "lease_expires_at, result, errors, finished_at, leased_at, traceparent"
constexpr int kJobColumnCount = 22;  // of SLUICE_JOB_COLUMNS: a column after them is this one

constexpr const char* kSelectQueue =
    "SELECT name, policy, version, paused FROM queues WHERE name = ?";
constexpr const char* kQueueExists = "SELECT 1 FROM queues WHERE name = ?";
#define SLUICE_BUCKET_SUMS                                                    \
  "COALESCE(SUM(b.queued_count), 0), COALESCE(SUM(b.queued_cost), 0), "       \
  "COALESCE(SUM(b.leased), 0), COALESCE(SUM(b.admitted_total), 0), "          \
  "COALESCE(SUM(b.released_total), 0), COALESCE(SUM(b.succeeded_total), 0), " \
  "COALESCE(SUM(b.failed_total), 0), COALESCE(SUM(b.expired_total), 0), "     \
  "COALESCE(SUM(b.lease_timeouts_total), 0)"
constexpr const char* kSelectQueueStats =
    "SELECT " SLUICE_BUCKET_SUMS " FROM buckets b WHERE b.queue = ?";
constexpr const char* kListQueues =
    "SELECT q.name, q.policy, q.version, q.paused, " SLUICE_BUCKET_SUMS
    " FROM queues q LEFT JOIN buckets b ON b.queue = q.name GROUP BY q.name ORDER BY q.name";
constexpr const char* kQueueBusy =
    "SELECT COALESCE(SUM(queued_count), 0) + COALESCE(SUM(leased), 0) FROM buckets "
    "WHERE queue = ?";
constexpr const char* kDeleteQueue = "DELETE FROM queues WHERE name = ?";
constexpr const char* kBacklogBuckets =
    "SELECT tenant, tat_us, tat_frac FROM buckets WHERE queue = ? ORDER BY tenant";
constexpr const char* kBacklogJobs =
    "SELECT tenant, cost, deadline_at FROM jobs INDEXED BY jobs_queued_head "
    "WHERE queue = ? AND state = 'queued' ORDER BY tenant, seq";
constexpr const char* kUpsertQueue =
    "INSERT INTO queues (name, policy, version, paused, created_at, updated_at) "
    "VALUES (?1, ?2, 1, 0, ?3, ?3) "
    "ON CONFLICT (name) DO UPDATE SET policy = excluded.policy, version = version + 1, "
    "updated_at = excluded.updated_at";
constexpr const char* kSetPaused = "UPDATE queues SET paused = ?, updated_at = ? WHERE name = ?";

constexpr const char* kSelectBucket =
    "SELECT tat_us, tat_frac, queued_count, queued_cost, leased FROM buckets "
    "WHERE queue = ? AND tenant = ?";
constexpr const char* kListBuckets =
    "SELECT b.tenant, b.queued_count, b.queued_cost, b.leased, b.tat_us, b.tat_frac, "
    "(SELECT j.created_at FROM jobs j WHERE j.queue = b.queue AND j.tenant = b.tenant "
    " AND j.state = 'queued' ORDER BY j.seq LIMIT 1), "
    "b.admitted_total, b.released_total, b.succeeded_total, b.failed_total, b.expired_total, "
    "b.lease_timeouts_total "
    "FROM buckets b WHERE b.queue = ? ORDER BY b.tenant";
// Every bucket of a queue with an available head job: the bucket and its head.
constexpr const char* kBucketHeads =
    "SELECT b.tenant, b.tat_us, b.tat_frac, b.leased, j.seq, j.cost, j.deadline_at FROM buckets b "
    "JOIN jobs j ON j.seq = (SELECT h.seq FROM jobs h INDEXED BY jobs_queued_head "
    " WHERE h.queue = b.queue "
    " AND h.tenant = b.tenant AND h.state = 'queued' AND h.available_at <= ?2 "
    " ORDER BY h.seq LIMIT 1) "
    "WHERE b.queue = ?1 AND b.queued_count > 0";
constexpr const char* kBucketAdmitted =
    "INSERT INTO buckets (queue, tenant, queued_count, queued_cost, admitted_total) "
    "VALUES (?1, ?2, 1, ?3, 1) "
    "ON CONFLICT (queue, tenant) DO UPDATE SET queued_count = queued_count + 1, "
    "queued_cost = queued_cost + ?3, admitted_total = admitted_total + 1";
constexpr const char* kBucketReleased =
    "UPDATE buckets SET tat_us = ?, tat_frac = ?, queued_count = queued_count - 1, "
    "queued_cost = queued_cost - ?, leased = leased + 1, released_total = released_total + 1 "
    "WHERE queue = ? AND tenant = ?";
// A lease ended: succeeded (?1 = 1), failed for good (?2 = 1), by running out (?3 = 1).
constexpr const char* kBucketLeaseEnded =
    "UPDATE buckets SET leased = leased - 1, succeeded_total = succeeded_total + ?1, "
    "failed_total = failed_total + ?2, lease_timeouts_total = lease_timeouts_total + ?3 "
    "WHERE queue = ?4 AND tenant = ?5";
constexpr const char* kBucketRequeued =
    "UPDATE buckets SET leased = leased - 1, queued_count = queued_count + 1, "
    "queued_cost = queued_cost + ?1, lease_timeouts_total = lease_timeouts_total + ?2 "
    "WHERE queue = ?3 AND tenant = ?4";
// A queued job left without a lease: canceled (?2 = 0) or expired (?2 = 1).
constexpr const char* kBucketDequeued =
    "UPDATE buckets SET queued_count = queued_count - 1, queued_cost = queued_cost - ?1, "
    "expired_total = expired_total + ?2 WHERE queue = ?3 AND tenant = ?4";

constexpr const char* kInsertJob =
    "INSERT INTO jobs (id, queue, tenant, state, payload, cost, attempt, max_attempts, lease_ms, "
    "policy_version, created_at, not_before, available_at, deadline_at, estimated_start, "
    "traceparent) "
    "VALUES (?, ?, ?, 'queued', ?, ?, 0, ?, ?, ?, ?, ?, ?, ?, ?, ?)";
constexpr const char* kSelectJob = "SELECT " SLUICE_JOB_COLUMNS " FROM jobs WHERE id = ?";
constexpr const char* kBucketHead =
    "SELECT seq, cost, deadline_at FROM jobs INDEXED BY jobs_queued_head "
    "WHERE queue = ? AND tenant = ? AND state = 'queued' "
    "AND available_at <= ? ORDER BY seq LIMIT 1";
// Queued cost ahead of a job in its bucket among jobs available now (rule 8).
constexpr const char* kCostAhead =
    "SELECT COALESCE(SUM(cost), 0) FROM jobs INDEXED BY jobs_queued_head "
    "WHERE queue = ?1 AND tenant = ?2 "
    "AND state = 'queued' AND seq < (SELECT seq FROM jobs WHERE id = ?3) AND available_at <= ?4";
constexpr const char* kNextAvailable =
    "SELECT MIN(available_at) FROM jobs WHERE queue = ? AND state = 'queued' "
    "AND available_at > created_at AND available_at > ?";
constexpr const char* kLeaseJob =
    "UPDATE jobs SET state = 'leased', attempt = attempt + 1, lease_id = ?1, "
    "lease_expires_at = ?2 + COALESCE(?3, lease_ms) * 1000, worker_id = ?4, leased_at = ?2 "
    "WHERE seq = ?5 AND state = 'queued' RETURNING " SLUICE_JOB_COLUMNS;
constexpr const char* kCompleteJob =
    "UPDATE jobs SET state = 'succeeded', result = ?1, finished_at = ?2, lease_id = NULL, "
    "lease_expires_at = NULL WHERE id = ?3 AND state = 'leased' AND lease_id = ?4 "
    "AND lease_expires_at > ?2 RETURNING " SLUICE_JOB_COLUMNS;
constexpr const char* kSelectLiveLease =
    "SELECT seq, queue, tenant, cost, attempt, max_attempts, deadline_at FROM jobs "
    "WHERE id = ?1 AND state = 'leased' AND lease_id = ?2 AND lease_expires_at > ?3";
// A failed attempt: back to queued (retry) or to failed, its error appended.
constexpr const char* kEndAttempt =
    "UPDATE jobs SET state = ?1, available_at = COALESCE(?2, available_at), "
    "finished_at = CASE WHEN ?1 = 'queued' THEN NULL ELSE ?3 END, lease_id = NULL, "
    "lease_expires_at = NULL, worker_id = NULL, "
    "errors = json_insert(errors, '$[#]', json_object('attempt', attempt, 'error', ?4, 'at', ?3)) "
    "WHERE seq = ?5 AND state = 'leased' RETURNING " SLUICE_JOB_COLUMNS;
constexpr const char* kJobExists = "SELECT 1 FROM jobs WHERE id = ?";
constexpr const char* kExpireDue =
    "UPDATE jobs SET state = 'expired', finished_at = ?1 WHERE state = 'queued' "
    "AND deadline_at IS NOT NULL AND deadline_at <= ?1 RETURNING queue, tenant, cost";
constexpr const char* kLeasesDue =
    "SELECT seq, queue, tenant, cost, attempt, max_attempts, deadline_at FROM jobs "
    "WHERE state = 'leased' AND lease_expires_at <= ?";

constexpr const char* kHeartbeat =
    "UPDATE jobs SET lease_expires_at = ?1 + COALESCE(?2, lease_ms) * 1000 "
    "WHERE id = ?3 AND state = 'leased' AND lease_id = ?4 AND lease_expires_at > ?1 "
    "RETURNING " SLUICE_JOB_COLUMNS;
constexpr const char* kCancel =
    "UPDATE jobs SET state = 'canceled', finished_at = ?1 WHERE id = ?2 AND state = 'queued' "
    "RETURNING " SLUICE_JOB_COLUMNS;
constexpr const char* kRetry =
    "UPDATE jobs SET state = 'queued', attempt = 0, available_at = ?1, deadline_at = NULL, "
    "finished_at = NULL WHERE id = ?2 AND state IN ('failed', 'expired') "
    "RETURNING " SLUICE_JOB_COLUMNS;
constexpr const char* kBucketEnqueued =
    "INSERT INTO buckets (queue, tenant, queued_count, queued_cost, admitted_total) "
    "VALUES (?1, ?2, 1, ?3, 1) "
    "ON CONFLICT (queue, tenant) DO UPDATE SET queued_count = queued_count + 1, "
    "queued_cost = queued_cost + ?3, admitted_total = admitted_total + 1";
constexpr const char* kListJobs = "SELECT " SLUICE_JOB_COLUMNS
                                  ", seq FROM jobs WHERE seq > ?1 "
                                  "AND (?2 IS NULL OR tenant = ?2) AND (?3 IS NULL OR queue = ?3) "
                                  "AND (?4 IS NULL OR state = ?4) ORDER BY seq LIMIT ?5";
constexpr const char* kCleanJobs =
    "DELETE FROM jobs WHERE seq IN (SELECT seq FROM jobs INDEXED BY jobs_finished "
    "WHERE finished_at IS NOT NULL AND finished_at < ?1 LIMIT ?2)";
constexpr const char* kCleanKeys =
    "DELETE FROM idempotency_keys WHERE (tenant, key) IN (SELECT tenant, key FROM "
    "idempotency_keys WHERE created_at < ?1 LIMIT ?2)";
constexpr const char* kSelectIdempotency =
    "SELECT body_hash, job_id FROM idempotency_keys WHERE tenant = ? AND key = ?";
constexpr const char* kInsertIdempotency =
    "INSERT INTO idempotency_keys (tenant, key, body_hash, job_id, created_at) "
    "VALUES (?, ?, ?, ?, ?)";
constexpr const char* kProbe =
    "INSERT INTO readiness_probe (id, at) VALUES (1, ?1) ON CONFLICT (id) DO UPDATE SET at = ?1";

constexpr const char* kInsertToken =
    "INSERT INTO tokens (id, secret_hash, tenant, scopes, queues, created_at) "
    "VALUES (?, ?, ?, ?, ?, ?)";
#define SLUICE_TOKEN_COLUMNS "id, secret_hash, tenant, scopes, queues, created_at, revoked_at"
constexpr const char* kSelectToken = "SELECT " SLUICE_TOKEN_COLUMNS " FROM tokens WHERE id = ?";
constexpr const char* kListTokens =
    "SELECT " SLUICE_TOKEN_COLUMNS " FROM tokens ORDER BY created_at, id";
constexpr const char* kRevokeToken =
    "UPDATE tokens SET revoked_at = COALESCE(revoked_at, ?1) WHERE id = ?2 "
    "RETURNING " SLUICE_TOKEN_COLUMNS;

// Columns added after a table was first released: added to older databases at open.
struct Migration {
  const char* table;
  const char* column;
  const char* definition;
};
constexpr Migration kMigrations[] = {
    {"buckets", "admitted_total", "INTEGER NOT NULL DEFAULT 0"},
    {"buckets", "released_total", "INTEGER NOT NULL DEFAULT 0"},
    {"buckets", "succeeded_total", "INTEGER NOT NULL DEFAULT 0"},
    {"buckets", "failed_total", "INTEGER NOT NULL DEFAULT 0"},
    {"buckets", "expired_total", "INTEGER NOT NULL DEFAULT 0"},
    {"buckets", "lease_timeouts_total", "INTEGER NOT NULL DEFAULT 0"},
    {"jobs", "traceparent", "TEXT"},
};
// Indexes of older schemas that schema.sql no longer has. jobs_queued_available
// indexed every queued job; jobs_delayed, which replaced it, only the delayed ones,
// so a plain submit writes one index page fewer.
constexpr const char* kDroppedIndexes[] = {"jobs_queued_available"};

// ---- Row mapping -------------------------------------------------------------------

JobRecord RowToJob(const Stmt& s) {
  JobRecord j;
  j.id = s.Text(0);
  j.queue = s.Text(1);
  j.tenant = s.Text(2);
  j.state = ParseJobState(s.Text(3)).value_or(JobState::kQueued);
  j.payload = s.Text(4);
  j.cost = s.Int(5);
  j.attempt = s.Int(6);
  j.max_attempts = s.Int(7);
  j.lease_ms = s.Int(8);
  j.policy_version = s.Int(9);
  j.created_at = s.Int(10);
  j.not_before = s.OptInt(11);
  j.available_at = s.Int(12);
  j.deadline = s.OptInt(13);
  j.estimated_start = s.Int(14);
  j.lease_id = s.OptText(15);
  j.lease_expires_at = s.OptInt(16);
  j.result = s.OptText(17);
  j.errors = s.Text(18);
  j.finished_at = s.OptInt(19);
  j.leased_at = s.OptInt(20);
  j.traceparent = s.OptText(21);
  return j;
}

// Parsing a stored policy is a pure function of its text, and it happens on every
// submit and every dispatch: remember the last few parses.
std::optional<QueuePolicy> ParseStoredPolicy(const std::string& text) {
  static std::mutex mu;
  static std::unordered_map<std::string, QueuePolicy> parsed;  // guarded by mu
  {
    std::lock_guard lock(mu);
    if (auto it = parsed.find(text); it != parsed.end()) return it->second;
  }
  // Written by PolicyToJson; a policy stored before the span rule still loads.
  auto policy = PolicyFromJson(json::parse(text, nullptr, false), /*check_spans=*/false);
  if (!policy.ok()) return std::nullopt;
  std::lock_guard lock(mu);
  if (parsed.size() >= 1024) parsed.clear();  // bounded: old policies fall out
  parsed.emplace(text, policy.value());
  return policy.value();
}

Result<QueueInfo> RowToQueue(const Stmt& s) {
  QueueInfo q;
  q.name = s.Text(0);
  auto policy = ParseStoredPolicy(s.Text(1));
  if (!policy) {
    return MakeError(ErrorCode::kInternal, "stored policy of " + q.name + " is invalid");
  }
  q.policy = *policy;
  q.version = s.Int(2);
  q.paused = s.Int(3) != 0;
  return q;
}

std::optional<QueueInfo> LoadQueue(Db& db, const std::string& name) {
  Stmt s = db.Prepare(kSelectQueue);
  s.BindAll(name);
  if (!s.Step()) return std::nullopt;
  auto q = RowToQueue(s);
  if (!q.ok()) throw sqlite::SqliteError(SQLITE_CORRUPT, q.error().detail);
  return q.value();
}

// Reads the sums of SLUICE_BUCKET_SUMS, starting at column `at`.
QueueStats RowToStats(const Stmt& s, int at) {
  QueueStats q{s.Int(at), s.Int(at + 1), s.Int(at + 2), {}};
  q.totals = Totals{s.Int(at + 3), s.Int(at + 4), s.Int(at + 5),
                    s.Int(at + 6), s.Int(at + 7), s.Int(at + 8)};
  return q;
}

QueueStats LoadQueueStats(Db& db, const std::string& name) {
  Stmt s = db.Prepare(kSelectQueueStats);
  s.BindAll(name);
  s.Step();
  return RowToStats(s, 0);
}

void Migrate(Db& db) {
  for (const Migration& m : kMigrations) {
    bool present = false;
    Stmt info = db.Prepare(std::string("PRAGMA table_info(") + m.table + ")");
    while (info.Step()) present = present || info.Text(1) == m.column;
    if (!present) {
      db.Exec(std::string("ALTER TABLE ") + m.table + " ADD COLUMN " + m.column + " " +
              m.definition);
    }
  }
  for (const char* index : kDroppedIndexes) {
    db.Exec(std::string("DROP INDEX IF EXISTS ") + index);
  }
}

TokenRecord RowToToken(const Stmt& s) {
  TokenRecord t;
  t.id = s.Text(0);
  t.secret_hash = s.Text(1);
  t.tenant = s.OptText(2);
  for (const auto& name : json::parse(s.Text(3), nullptr, false)) {
    if (name.is_string()) {
      if (auto sc = ParseScope(name.get<std::string>())) t.scopes.push_back(*sc);
    }
  }
  if (auto q = s.OptText(4)) {
    json a = json::parse(*q, nullptr, false);
    if (a.is_array()) t.queues = a.get<std::vector<std::string>>();
  }
  t.created_at = s.Int(5);
  t.revoked_at = s.OptInt(6);
  t.revoked = t.revoked_at.has_value();
  return t;
}

BucketState LoadBucket(Db& db, const std::string& queue, const std::string& tenant) {
  Stmt s = db.Prepare(kSelectBucket);
  s.BindAll(queue, tenant);
  BucketState b;
  if (s.Step()) {
    b.tat = ScheduleInstant{s.Int(0), s.Int(1)};
    b.queued_count = s.Int(2);
    b.queued_cost = s.Int(3);
    b.leased = s.Int(4);
  }
  return b;
}

Error UnknownQueue(const std::string& name) {
  return MakeError(ErrorCode::kNotFound, "queue '" + name + "' does not exist");
}

// Why a guarded transition changed nothing: the job is unknown (not_found), or it is
// not in the state the transition needs (`otherwise`).
Error MissingOr(Db& db, const std::string& id, Error otherwise) {
  Stmt s = db.Prepare(kJobExists);
  s.BindAll(id);
  if (!s.Step()) return MakeError(ErrorCode::kNotFound, "job '" + id + "' does not exist");
  return otherwise;
}

Error LostOrMissing(Db& db, const std::string& id) {
  return MissingOr(db, id,
                   MakeError(ErrorCode::kLeaseLost,
                             "the lease is not held: it expired, was "
                             "never granted, or the job moved on"));
}

// Rule 6: queued jobs whose deadline has come are expired and never leased.
int64_t ExpireDue(Db& db, Micros now) {
  struct Row {
    std::string queue, tenant;
    int64_t cost;
  };
  std::vector<Row> rows;
  {
    Stmt s = db.Prepare(kExpireDue);
    s.BindAll(now);
    while (s.Step()) rows.push_back({s.Text(0), s.Text(1), s.Int(2)});
  }
  for (const Row& r : rows) {
    db.Prepare(kBucketDequeued).BindAll(r.cost, 1, r.queue, r.tenant).Exec();
  }
  return static_cast<int64_t>(rows.size());
}

// Rule 7: a lease that ran out returns its job to queued at once, or fails it when
// attempts are exhausted or its deadline has passed.
MaintenanceCounts ReapExpiredLeases(Db& db, Micros now) {
  MaintenanceCounts counts;
  struct Row {
    int64_t seq;
    std::string queue, tenant;
    int64_t cost, attempt, max_attempts;
    std::optional<int64_t> deadline;
  };
  std::vector<Row> rows;
  {
    Stmt s = db.Prepare(kLeasesDue);
    s.BindAll(now);
    while (s.Step()) {
      rows.push_back({s.Int(0), s.Text(1), s.Text(2), s.Int(3), s.Int(4), s.Int(5), s.OptInt(6)});
    }
  }
  for (const Row& r : rows) {
    bool retry = r.attempt < r.max_attempts && (!r.deadline || *r.deadline > now);
    Stmt s = db.Prepare(kEndAttempt);
    s.Bind(1, retry ? "queued" : "failed");
    s.Bind(2, retry ? std::optional<int64_t>(now) : std::nullopt);
    s.Bind(3, now);
    s.Bind(4, "lease expired");
    s.Bind(5, r.seq);
    if (!s.Step()) continue;
    if (retry) {
      db.Prepare(kBucketRequeued).BindAll(r.cost, 1, r.queue, r.tenant).Exec();
      ++counts.leases_requeued;
    } else {
      db.Prepare(kBucketLeaseEnded).BindAll(0, 1, 1, r.queue, r.tenant).Exec();
      ++counts.leases_failed;
    }
  }
  return counts;
}

std::optional<BucketView> LoadBucketView(Db& db, size_t queue_index, const QueueInfo& q,
                                         const std::string& tenant, ScheduleInstant tat,
                                         int64_t leased, Micros now) {
  Stmt s = db.Prepare(kBucketHead);
  s.BindAll(q.name, tenant, now);
  if (!s.Step()) return std::nullopt;
  BucketView v;
  v.queue = queue_index;
  v.policy = q.policy.ForTenant(tenant);
  v.tat = tat;
  v.leased = leased;
  v.head_seq = s.Int(0);
  v.head_cost = s.Int(1);
  v.head_deadline = s.OptInt(2);
  return v;
}

// Jobs released this close together may share one lease answer (handed out at the
// latest of their release times).
constexpr Micros kCoalesceMicros = 1000;

// Leases for a group of requests that name the same queues, in one pass: one scan of
// the buckets, then release after release (earliest release time first) handed to the
// requests in FIFO order until each has its max_jobs or nothing more is releasable.
void LeaseGroup(Db& db, const std::vector<std::string>& queue_names,
                const std::vector<const LeaseRequest*>& reqs, std::vector<LeaseOutcome*>& outs,
                Micros now, Micros horizon) {
  std::vector<QueueInfo> queues;
  std::vector<QueueView> qviews;
  std::vector<BucketView> bviews;
  std::vector<std::string> tenants;  // parallel to bviews
  std::optional<Micros> wake_at;
  for (const std::string& name : queue_names) {
    auto q = LoadQueue(db, name);
    if (!q) continue;
    QueueView qv;
    qv.leased = LoadQueueStats(db, name).leased;
    qv.max_inflight = q->policy.max_inflight;
    qv.paused = q->paused;
    size_t qi = queues.size();
    queues.push_back(*q);
    qviews.push_back(qv);
    if (qv.paused) continue;
    Stmt s = db.Prepare(kBucketHeads);
    s.BindAll(name, now);
    while (s.Step()) {
      BucketView v;
      v.queue = qi;
      v.policy = queues[qi].policy.ForTenant(s.Text(0));
      v.tat = ScheduleInstant{s.Int(1), s.Int(2)};
      v.leased = s.Int(3);
      v.head_seq = s.Int(4);
      v.head_cost = s.Int(5);
      v.head_deadline = s.OptInt(6);
      bviews.push_back(v);
      tenants.push_back(s.Text(0));
    }
    Stmt next = db.Prepare(kNextAvailable);
    next.BindAll(name, now);
    if (next.Step() && !next.IsNull(0)) {
      Micros at = next.Int(0);
      if (!wake_at || at < *wake_at) wake_at = at;
    }
  }

  size_t r = 0;  // the request being filled
  while (r < reqs.size()) {
    if (static_cast<int64_t>(outs[r]->jobs.size()) >= reqs[r]->max_jobs) {
      ++r;
      continue;
    }
    DispatchChoice choice = ChooseRelease(qviews, bviews, now, horizon);
    if (!choice.release) {
      if (choice.wake_at && (!wake_at || *choice.wake_at < *wake_at)) wake_at = choice.wake_at;
      break;
    }
    size_t i = *choice.release;
    BucketView& b = bviews[i];
    const QueueInfo& q = queues[b.queue];
    const Micros released_at = ReleaseTime(b, now);
    // One answer holds jobs released within kCoalesceMicros of its first, so no job is
    // handed out much later than its time for the sake of another: the next waiter
    // takes it.
    if (!outs[r]->jobs.empty() &&
        released_at > *outs[r]->jobs.front().leased_at + kCoalesceMicros) {
      ++r;
      continue;
    }
    Stmt s = db.Prepare(kLeaseJob);
    s.Bind(1, RandomId("lse_", 12));
    s.Bind(2, released_at);
    s.Bind(3, reqs[r]->lease_ms);
    s.Bind(4, reqs[r]->worker_id);
    s.Bind(5, b.head_seq);
    if (!s.Step()) throw sqlite::SqliteError(SQLITE_INTERNAL, "bucket head vanished");
    outs[r]->jobs.push_back(RowToJob(s));
    ScheduleInstant tat = AfterRelease(b.policy, b.tat, b.head_cost, released_at);
    db.Prepare(kBucketReleased).BindAll(tat.us, tat.frac, b.head_cost, q.name, tenants[i]).Exec();
    qviews[b.queue].leased += 1;
    if (auto next = LoadBucketView(db, b.queue, q, tenants[i], tat, b.leased + 1, now)) {
      b = *next;
    } else {
      bviews.erase(bviews.begin() + static_cast<std::ptrdiff_t>(i));
      tenants.erase(tenants.begin() + static_cast<std::ptrdiff_t>(i));
    }
  }
  bool cap_blocked = false;
  for (const BucketView& b : bviews) {
    BlockedBy why = BucketBlockedBy(qviews[b.queue], b, now);
    cap_blocked = cap_blocked || why == BlockedBy::kQueueCap || why == BlockedBy::kTenantCap;
  }
  // Requests left without jobs learn when to look again.
  for (LeaseOutcome* out : outs) {
    if (out->jobs.empty()) out->wake_at = wake_at;
    out->cap_blocked = cap_blocked;
  }
}

// Groups requests by the set of queues they name, keeping FIFO order within a group.
void LeaseAll(Db& db, const std::vector<LeaseRequest>& requests, std::vector<LeaseOutcome>& outs,
              Micros now, Micros horizon) {
  std::map<std::vector<std::string>,
           std::pair<std::vector<const LeaseRequest*>, std::vector<LeaseOutcome*>>>
      groups;
  std::vector<const std::vector<std::string>*> order;
  for (size_t i = 0; i < requests.size(); ++i) {
    std::set<std::string> uniq(requests[i].queues.begin(), requests[i].queues.end());
    std::vector<std::string> key(uniq.begin(), uniq.end());
    auto [it, inserted] = groups.try_emplace(key);
    if (inserted) order.push_back(&it->first);
    it->second.first.push_back(&requests[i]);
    it->second.second.push_back(&outs[i]);
  }
  for (const auto* key : order) {
    auto& [reqs, group_outs] = groups[*key];
    LeaseGroup(db, *key, reqs, group_outs, now, horizon);
  }
}

std::string ScopesToJson(const std::vector<Scope>& scopes) {
  json a = json::array();
  for (Scope s : scopes) a.push_back(ScopeName(s));
  return a.dump();
}

}  // namespace

// ---- SqliteStore -------------------------------------------------------------------

SqliteStore::SqliteStore(SqliteStoreOptions options) : options_(std::move(options)) {}

SqliteStore::~SqliteStore() = default;

Result<std::unique_ptr<SqliteStore>> SqliteStore::Open(SqliteStoreOptions options) {
  if (!options.unit_random) {
    auto rng = std::make_shared<std::mt19937_64>(std::random_device{}());
    auto mu = std::make_shared<std::mutex>();
    options.unit_random = [rng, mu] {
      std::lock_guard lock(*mu);
      return std::uniform_real_distribution<double>(0.0, 1.0)(*rng);
    };
  }
  std::unique_ptr<SqliteStore> store(new SqliteStore(options));
  try {
    // The writer's WAL writes go out one system call per commit (store/wal_vfs.h).
    auto db = std::make_unique<Db>(options.path, options.synchronous, options.busy_timeout_ms,
                                   sqlite::RegisterCoalescingWalVfs());
    db->Exec(kSchemaSql);
    Migrate(*db);
    store->checkpointer_ = std::make_unique<Checkpointer>(options.path, *db);
    store->writer_ = std::make_unique<Writer>(std::move(db), options.max_batch, options.completions,
                                              options.on_commit, options.on_flush);
  } catch (const sqlite::SqliteError& e) {
    Error err = sqlite::ToError(e);
    err.detail = std::string("cannot open database: ") + e.what();
    return err;
  }
  return store;
}

template <typename T>
Result<T> SqliteStore::Read(const std::function<Result<T>(Db&)>& fn) {
  std::unique_ptr<Db> db;
  {
    std::lock_guard lock(readers_mu_);
    if (!idle_readers_.empty()) {
      db = std::move(idle_readers_.back());
      idle_readers_.pop_back();
    }
  }
  try {
    if (!db)
      db = std::make_unique<Db>(options_.path, options_.synchronous, options_.busy_timeout_ms);
    Result<T> r = fn(*db);
    std::lock_guard lock(readers_mu_);
    idle_readers_.push_back(std::move(db));
    return r;
  } catch (const sqlite::SqliteError& e) {
    return sqlite::ToError(e);  // drop the connection: it may be in a bad state
  }
}

Result<QueueInfo> SqliteStore::PutQueue(const std::string& name, const QueuePolicy& policy,
                                        Micros now) {
  std::string text = PolicyToJson(policy).dump();
  return writer_->Run<QueueInfo>([&](Db& db) -> Result<QueueInfo> {
    db.Prepare(kUpsertQueue).BindAll(name, text, now).Exec();
    QueueInfo q = *LoadQueue(db, name);
    q.stats = LoadQueueStats(db, name);
    return q;
  });
}

Result<QueueInfo> SqliteStore::GetQueue(const std::string& name) {
  return Read<QueueInfo>([&](Db& db) -> Result<QueueInfo> {
    auto q = LoadQueue(db, name);
    if (!q) return UnknownQueue(name);
    q->stats = LoadQueueStats(db, name);
    return *q;
  });
}

Status SqliteStore::CheckQueue(const std::string& name) {
  return Read<Ok>([&](Db& db) -> Status {
    Stmt s = db.Prepare(kQueueExists);
    s.BindAll(name);
    if (!s.Step()) return UnknownQueue(name);
    return Ok{};
  });
}

Result<std::vector<QueueInfo>> SqliteStore::ListQueues() {
  return Read<std::vector<QueueInfo>>([&](Db& db) -> Result<std::vector<QueueInfo>> {
    std::vector<QueueInfo> out;
    Stmt s = db.Prepare(kListQueues);
    while (s.Step()) {
      auto q = RowToQueue(s);
      if (!q.ok()) return q.error();
      q.value().stats = RowToStats(s, 4);
      out.push_back(q.value());
    }
    return out;
  });
}

Result<std::vector<BucketInfo>> SqliteStore::ListBuckets(const std::string& queue) {
  return Read<std::vector<BucketInfo>>([&](Db& db) -> Result<std::vector<BucketInfo>> {
    auto q = LoadQueue(db, queue);
    if (!q) return UnknownQueue(queue);
    std::vector<BucketInfo> out;
    Stmt s = db.Prepare(kListBuckets);
    s.BindAll(queue);
    while (s.Step()) {
      BucketInfo b;
      b.tenant = s.Text(0);
      b.queued = s.Int(1);
      b.queued_cost = s.Int(2);
      b.leased = s.Int(3);
      b.policy = q->policy.ForTenant(b.tenant);
      if (b.queued > 0)
        b.next_release_at = ReleaseAt(b.policy, ScheduleInstant{s.Int(4), s.Int(5)});
      b.oldest_queued_at = s.OptInt(6);
      b.totals = Totals{s.Int(7), s.Int(8), s.Int(9), s.Int(10), s.Int(11), s.Int(12)};
      out.push_back(b);
    }
    return out;
  });
}

Status SqliteStore::SetPaused(const std::string& queue, bool paused, Micros now) {
  return writer_->Run<Ok>([&](Db& db) -> Status {
    if (db.Prepare(kSetPaused).BindAll(paused ? 1 : 0, now, queue).Exec() == 0) {
      return UnknownQueue(queue);
    }
    return Ok{};
  });
}

void SqliteStore::SubmitAsync(NewJob job, Micros now, Done<SubmitOutcome> done) {
  writer_->RunAsync<SubmitOutcome>(
      [this, job = std::move(job), now](Db& db) -> Result<SubmitOutcome> {
        auto q = LoadQueue(db, job.queue);
        if (!q) return UnknownQueue(job.queue);
        SubmitOutcome out;
        out.policy = q->policy.ForTenant(job.tenant);
        out.policy_version = q->version;
        if (job.idempotency_key) {
          Stmt seen = db.Prepare(kSelectIdempotency);
          seen.BindAll(job.tenant, *job.idempotency_key);
          if (seen.Step()) {
            if (seen.Text(0) != job.body_hash) {
              return MakeError(ErrorCode::kIdempotencyKeyReused,
                               "this Idempotency-Key was used with a different request body");
            }
            const std::string original = seen.Text(1);
            Stmt j = db.Prepare(kSelectJob);
            j.BindAll(original);
            if (!j.Step()) return MakeError(ErrorCode::kInternal, "idempotent job vanished");
            out.job = RowToJob(j);
            out.replayed = true;
            out.decision.outcome = AdmissionOutcome::kAdmitted;
            out.decision.estimated_start = out.job->estimated_start;
            BucketState b = LoadBucket(db, job.queue, job.tenant);
            out.decision.remaining = std::max<int64_t>(0, out.policy.capacity - b.queued_cost);
            return out;
          }
        }
        BucketState bucket = LoadBucket(db, job.queue, job.tenant);
        AdmissionRequest req;
        req.cost = job.cost;
        req.not_before = job.not_before;
        req.deadline = job.deadline;
        if (!req.deadline && q->policy.default_deadline_ms > 0) {
          req.deadline = now + q->policy.default_deadline_ms * kMicrosPerMilli;
        }
        out.decision = Admit(out.policy, bucket, req, now);
        if (out.decision.outcome != AdmissionOutcome::kAdmitted) return out;

        // The stored row is exactly these values and the schema's defaults (no
        // RETURNING: it would copy the row through a temporary table).
        JobRecord& j = out.job.emplace();
        j.id = TimeOrderedId("job_", now, 6);
        j.queue = job.queue;
        j.tenant = job.tenant;
        j.payload = job.payload;
        j.cost = job.cost;
        j.max_attempts = job.max_attempts.value_or(q->policy.max_attempts);
        j.lease_ms = job.lease_ms.value_or(q->policy.lease_ms);
        j.policy_version = q->version;
        j.created_at = now;
        j.not_before = job.not_before;
        j.available_at = std::max(now, job.not_before.value_or(now));
        j.deadline = req.deadline;
        j.estimated_start = out.decision.estimated_start;
        j.traceparent = job.traceparent;
        db.Prepare(kInsertJob)
            .BindAll(j.id, j.queue, j.tenant, j.payload, j.cost, j.max_attempts, j.lease_ms,
                     j.policy_version, j.created_at, j.not_before, j.available_at, j.deadline,
                     j.estimated_start, j.traceparent)
            .Exec();
        db.Prepare(kBucketAdmitted).BindAll(job.queue, job.tenant, job.cost).Exec();
        if (job.idempotency_key) {
          db.Prepare(kInsertIdempotency)
              .BindAll(job.tenant, *job.idempotency_key, job.body_hash, out.job->id, now)
              .Exec();
        }
        return out;
      },
      std::move(done));
}

Result<JobRecord> SqliteStore::GetJob(const std::string& id) {
  return Read<JobRecord>([&](Db& db) -> Result<JobRecord> {
    Stmt s = db.Prepare(kSelectJob);
    s.BindAll(id);
    if (!s.Step()) return MakeError(ErrorCode::kNotFound, "job '" + id + "' does not exist");
    return RowToJob(s);
  });
}

Result<QueuedJobExplanation> SqliteStore::ExplainQueued(const JobRecord& job, Micros now) {
  return Read<QueuedJobExplanation>([&](Db& db) -> Result<QueuedJobExplanation> {
    auto q = LoadQueue(db, job.queue);
    if (!q) return UnknownQueue(job.queue);
    QueueView qv;
    qv.leased = LoadQueueStats(db, job.queue).leased;
    qv.max_inflight = q->policy.max_inflight;
    qv.paused = q->paused;
    BucketState bucket = LoadBucket(db, job.queue, job.tenant);
    BucketView bv;
    bv.policy = q->policy.ForTenant(job.tenant);
    bv.tat = bucket.tat;
    bv.leased = bucket.leased;
    Stmt s = db.Prepare(kCostAhead);
    s.BindAll(job.queue, job.tenant, job.id, now);
    s.Step();
    QueuedJobExplanation out;
    out.estimated_start =
        std::max(job.available_at, EstimatedStart(bv.policy, bucket.tat, s.Int(0), now));
    out.blocked_by = QueuedJobBlockedBy(qv, bv, job.available_at, out.estimated_start,
                                        /*worker_waiting=*/true, now);
    return out;
  });
}

std::vector<Result<LeaseOutcome>> SqliteStore::LeaseMany(const std::vector<LeaseRequest>& requests,
                                                         Micros now, Micros horizon) {
  using Outcomes = std::vector<LeaseOutcome>;
  // Leases are answered once committed, not flushed: a lease a power loss forgets
  // leaves its job queued, to be leased again (a worker holding the forgotten lease
  // gets lease_lost on its ack). Anything durable that follows flushes them too.
  auto r = writer_->Run<Outcomes>(
      [&](Db& db) -> Result<Outcomes> {
        (void)ReapExpiredLeases(db, now);
        (void)ExpireDue(db, now);
        Outcomes out(requests.size());
        LeaseAll(db, requests, out, now, std::max(now, horizon));
        return out;
      },
      Writer::Sync::kCommitted);
  std::vector<Result<LeaseOutcome>> results;
  for (size_t i = 0; i < requests.size(); ++i) {
    if (r.ok()) {
      results.emplace_back(std::move(r.value()[i]));
    } else {
      results.emplace_back(r.error());
    }
  }
  return results;
}

void SqliteStore::CompleteAsync(std::string id, std::string lease_id,
                                std::optional<std::string> result, Micros now,
                                Done<JobRecord> done) {
  writer_->RunAsync<JobRecord>(
      [id = std::move(id), lease_id = std::move(lease_id), result = std::move(result),
       now](Db& db) -> Result<JobRecord> {
        Stmt s = db.Prepare(kCompleteJob);
        s.BindAll(result, now, id, lease_id);
        if (!s.Step()) return LostOrMissing(db, id);
        JobRecord job = RowToJob(s);
        db.Prepare(kBucketLeaseEnded).BindAll(1, 0, 0, job.queue, job.tenant).Exec();
        return job;
      },
      std::move(done));
}

void SqliteStore::FailAsync(std::string id, std::string lease_id, FailRequest fail, Micros now,
                            Done<JobRecord> done) {
  writer_->RunAsync<JobRecord>(
      [this, id = std::move(id), lease_id = std::move(lease_id), fail = std::move(fail),
       now](Db& db) -> Result<JobRecord> {
        Stmt live = db.Prepare(kSelectLiveLease);
        live.BindAll(id, lease_id, now);
        if (!live.Step()) return LostOrMissing(db, id);
        int64_t seq = live.Int(0);
        std::string queue = live.Text(1), tenant = live.Text(2);
        int64_t cost = live.Int(3), attempt = live.Int(4), max_attempts = live.Int(5);
        std::optional<int64_t> deadline = live.OptInt(6);

        bool retry = fail.retryable && attempt < max_attempts && (!deadline || *deadline > now);
        std::optional<int64_t> available_at;
        if (retry) {
          int64_t delay_ms = 0;
          if (fail.retry_in_ms) {
            delay_ms = *fail.retry_in_ms;
          } else if (auto q = LoadQueue(db, queue)) {
            delay_ms =
                FullJitterBackoffMs(q->policy.retry_backoff_ms, q->policy.retry_backoff_max_ms,
                                    attempt, options_.unit_random());
          }
          available_at = now + delay_ms * kMicrosPerMilli;
        }
        Stmt s = db.Prepare(kEndAttempt);
        s.Bind(1, retry ? "queued" : "failed");
        s.Bind(2, available_at);
        s.Bind(3, now);
        s.Bind(4, fail.error);
        s.Bind(5, seq);
        if (!s.Step()) return LostOrMissing(db, id);
        JobRecord job = RowToJob(s);
        if (retry) {
          db.Prepare(kBucketRequeued).BindAll(cost, 0, queue, tenant).Exec();
        } else {
          db.Prepare(kBucketLeaseEnded).BindAll(0, 1, 0, queue, tenant).Exec();
        }
        return job;
      },
      std::move(done));
}

void SqliteStore::HeartbeatAsync(std::string id, std::string lease_id,
                                 std::optional<int64_t> extend_ms, Micros now,
                                 Done<JobRecord> done) {
  writer_->RunAsync<JobRecord>(
      [id = std::move(id), lease_id = std::move(lease_id), extend_ms,
       now](Db& db) -> Result<JobRecord> {
        Stmt s = db.Prepare(kHeartbeat);
        s.BindAll(now, extend_ms, id, lease_id);
        if (!s.Step()) return LostOrMissing(db, id);
        return RowToJob(s);
      },
      std::move(done));
}

Result<JobRecord> SqliteStore::Cancel(const std::string& id, Micros now) {
  return writer_->Run<JobRecord>([&](Db& db) -> Result<JobRecord> {
    Stmt s = db.Prepare(kCancel);
    s.BindAll(now, id);
    if (!s.Step())
      return MissingOr(db, id,
                       MakeError(ErrorCode::kConflict, "only a queued job can be canceled"));
    JobRecord job = RowToJob(s);
    db.Prepare(kBucketDequeued).BindAll(job.cost, 0, job.queue, job.tenant).Exec();
    return job;
  });
}

Result<JobRecord> SqliteStore::Retry(const std::string& id, Micros now) {
  return writer_->Run<JobRecord>([&](Db& db) -> Result<JobRecord> {
    Stmt s = db.Prepare(kRetry);
    s.BindAll(now, id);
    if (!s.Step())
      return MissingOr(
          db, id, MakeError(ErrorCode::kConflict, "only a failed or expired job can be retried"));
    JobRecord job = RowToJob(s);
    db.Prepare(kBucketEnqueued).BindAll(job.queue, job.tenant, job.cost).Exec();
    return job;
  });
}

Result<JobPage> SqliteStore::ListJobs(const JobFilter& f) {
  return Read<JobPage>([&](Db& db) -> Result<JobPage> {
    JobPage page;
    Stmt s = db.Prepare(kListJobs);
    std::optional<std::string> state;
    if (f.state) state = std::string(JobStateName(*f.state));
    s.BindAll(f.after_seq, f.tenant, f.queue, state, f.limit);
    int64_t last = 0;
    while (s.Step()) {
      page.jobs.push_back(RowToJob(s));
      last = s.Int(kJobColumnCount);
    }
    if (static_cast<int64_t>(page.jobs.size()) == f.limit) page.next_after_seq = last;
    return page;
  });
}

Result<MaintenanceCounts> SqliteStore::ReapLeases(Micros now) {
  return writer_->Run<MaintenanceCounts>(
      [&](Db& db) -> Result<MaintenanceCounts> { return ReapExpiredLeases(db, now); });
}

Result<MaintenanceCounts> SqliteStore::ExpireDeadlines(Micros now) {
  return writer_->Run<MaintenanceCounts>([&](Db& db) -> Result<MaintenanceCounts> {
    MaintenanceCounts c;
    c.expired = ExpireDue(db, now);
    return c;
  });
}

Result<MaintenanceCounts> SqliteStore::Clean(Micros finished_before, int64_t limit) {
  return writer_->Run<MaintenanceCounts>([&](Db& db) -> Result<MaintenanceCounts> {
    MaintenanceCounts c;
    c.cleaned = db.Prepare(kCleanJobs).BindAll(finished_before, limit).Exec();
    db.Prepare(kCleanKeys).BindAll(finished_before, limit).Exec();
    return c;
  });
}

Status SqliteStore::Probe(Micros now) {
  return writer_->Run<Ok>([&](Db& db) -> Status {
    db.Prepare(kProbe).BindAll(now).Exec();
    return Ok{};
  });
}

Status SqliteStore::CreateToken(const TokenRecord& t) {
  Status st = writer_->Run<Ok>([&](Db& db) -> Status {
    std::optional<std::string> queues;
    if (t.queues) queues = json(*t.queues).dump();
    db.Prepare(kInsertToken)
        .BindAll(t.id, t.secret_hash, t.tenant, ScopesToJson(t.scopes), queues, t.created_at)
        .Exec();
    return Ok{};
  });
  ForgetToken(t.id);
  return st;
}

void SqliteStore::ForgetToken(const std::string& id) {
  std::lock_guard lock(tokens_mu_);
  token_cache_.erase(id);
}

Result<std::optional<TokenRecord>> SqliteStore::FindToken(const std::string& id) {
  {
    std::lock_guard lock(tokens_mu_);
    if (auto it = token_cache_.find(id); it != token_cache_.end()) {
      return std::optional<TokenRecord>(it->second);
    }
  }
  auto found = ReadToken(id);
  if (found.ok() && found.value()) {
    std::lock_guard lock(tokens_mu_);
    if (token_cache_.size() >= kTokenCacheSize) token_cache_.clear();
    token_cache_.emplace(id, *found.value());
  }
  return found;
}

Result<std::optional<TokenRecord>> SqliteStore::ReadToken(const std::string& id) {
  return Read<std::optional<TokenRecord>>([&](Db& db) -> Result<std::optional<TokenRecord>> {
    Stmt s = db.Prepare(kSelectToken);
    s.BindAll(id);
    if (!s.Step()) return std::optional<TokenRecord>();
    return std::optional<TokenRecord>(RowToToken(s));
  });
}

Result<std::vector<TokenRecord>> SqliteStore::ListTokens() {
  return Read<std::vector<TokenRecord>>([&](Db& db) -> Result<std::vector<TokenRecord>> {
    std::vector<TokenRecord> out;
    Stmt s = db.Prepare(kListTokens);
    while (s.Step()) out.push_back(RowToToken(s));
    return out;
  });
}

Result<TokenRecord> SqliteStore::RevokeToken(const std::string& id, Micros now) {
  auto r = writer_->Run<TokenRecord>([&](Db& db) -> Result<TokenRecord> {
    Stmt s = db.Prepare(kRevokeToken);
    s.BindAll(now, id);
    if (!s.Step()) return MakeError(ErrorCode::kNotFound, "token '" + id + "' does not exist");
    return RowToToken(s);
  });
  ForgetToken(id);  // after the commit: the next request reads the revocation
  return r;
}

Result<std::vector<TenantBacklog>> SqliteStore::Backlog(const std::string& queue) {
  return Read<std::vector<TenantBacklog>>([&](Db& db) -> Result<std::vector<TenantBacklog>> {
    if (!LoadQueue(db, queue)) return UnknownQueue(queue);
    std::vector<TenantBacklog> out;
    std::map<std::string, size_t> index;
    Stmt b = db.Prepare(kBacklogBuckets);
    b.BindAll(queue);
    while (b.Step()) {
      index[b.Text(0)] = out.size();
      out.push_back(TenantBacklog{b.Text(0), ScheduleInstant{b.Int(1), b.Int(2)}, {}});
    }
    Stmt j = db.Prepare(kBacklogJobs);
    j.BindAll(queue);
    while (j.Step()) {
      auto it = index.find(j.Text(0));
      if (it == index.end()) continue;  // every queued job has a bucket
      out[it->second].jobs.push_back(BacklogJob{j.Int(1), j.OptInt(2)});
    }
    return out;
  });
}

Status SqliteStore::DeleteQueue(const std::string& queue) {
  return writer_->Run<Ok>([&](Db& db) -> Status {
    Stmt busy = db.Prepare(kQueueBusy);
    busy.BindAll(queue);
    busy.Step();
    if (busy.Int(0) > 0) {
      return MakeError(ErrorCode::kConflict, "queue '" + queue +
                                                 "' still has queued or leased jobs: pause it "
                                                 "and let it drain (or cancel them) first");
    }
    if (db.Prepare(kDeleteQueue).BindAll(queue).Exec() == 0) return UnknownQueue(queue);
    return Ok{};
  });
}

}  // namespace sluice
