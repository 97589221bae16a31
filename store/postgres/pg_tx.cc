#include "store/postgres/pg_tx.h"

#include "store/engine/token_text.h"
#include "store/sql_files.h"

namespace sluice {
namespace {

using pg::Rows;

constexpr const char* kStatementsFile = "store/sql/postgres/statements.sql";

// The columns of select_job, from `at` on, of row `r`.
JobRecord RowToJob(const Rows& s, int r, int at = 0) {
  JobRecord j;
  j.id = s.Text(r, at + 0);
  j.queue = s.Text(r, at + 1);
  j.tenant = s.Text(r, at + 2);
  j.state = ParseJobState(s.Text(r, at + 3)).value_or(JobState::kQueued);
  j.payload = s.Text(r, at + 4);
  j.cost = s.Int(r, at + 5);
  j.attempt = s.Int(r, at + 6);
  j.max_attempts = s.Int(r, at + 7);
  j.lease_ms = s.Int(r, at + 8);
  j.policy_version = s.Int(r, at + 9);
  j.created_at = s.Int(r, at + 10);
  j.not_before = s.OptInt(r, at + 11);
  j.available_at = s.Int(r, at + 12);
  j.deadline = s.OptInt(r, at + 13);
  j.estimated_start = s.Int(r, at + 14);
  j.lease_id = s.OptText(r, at + 15);
  j.lease_expires_at = s.OptInt(r, at + 16);
  j.result = s.OptText(r, at + 17);
  j.errors = s.Text(r, at + 18);
  j.finished_at = s.OptInt(r, at + 19);
  j.leased_at = s.OptInt(r, at + 20);
  j.traceparent = s.OptText(r, at + 21);
  return j;
}
constexpr int kJobColumnCount = 22;

QueueRow RowToQueue(const Rows& s, int r) {
  return QueueRow{s.Text(r, 0), s.Text(r, 1), s.Int(r, 2), s.Bool(r, 3)};
}

// Nine sums from column `at`: queued, queued cost, leased, then the six totals.
QueueStats RowToStats(const Rows& s, int r, int at) {
  QueueStats q{s.Int(r, at), s.Int(r, at + 1), s.Int(r, at + 2), {}};
  q.totals = Totals{s.Int(r, at + 3), s.Int(r, at + 4), s.Int(r, at + 5),
                    s.Int(r, at + 6), s.Int(r, at + 7), s.Int(r, at + 8)};
  return q;
}

LeaseRow RowToLease(const Rows& s, int r) {
  return LeaseRow{s.Int(r, 0), s.Text(r, 1), s.Text(r, 2),  s.Int(r, 3),
                  s.Int(r, 4), s.Int(r, 5),  s.OptInt(r, 6)};
}

TokenRecord RowToToken(const Rows& s, int r) {
  TokenRecord t;
  t.id = s.Text(r, 0);
  t.secret_hash = s.Text(r, 1);
  t.tenant = s.OptText(r, 2);
  t.scopes = ScopesFromJson(s.Text(r, 3));
  t.queues = QueuesFromJson(s.OptText(r, 4));
  t.created_at = s.Int(r, 5);
  t.revoked_at = s.OptInt(r, 6);
  t.revoked = t.revoked_at.has_value();
  return t;
}

int64_t Flag(bool b) { return b ? 1 : 0; }

}  // namespace

const PgStatements& PgStatements::Get() {
  static const PgStatements statements(
      Statements(FindSqlFile(kStatementsFile).value_or(""), kStatementsFile));
  return statements;
}

PgStatements::PgStatements(const Statements& file) {
#define SLUICE_LOOKUP(name) name = file.Get(#name);
  SLUICE_PG_STATEMENTS(SLUICE_LOOKUP)
#undef SLUICE_LOOKUP
}

void PgStatements::PrepareOn(pg::Connection& conn) const {
#define SLUICE_PREPARE(name) conn.Prepare(#name, name);
  SLUICE_PG_STATEMENTS(SLUICE_PREPARE)
#undef SLUICE_PREPARE
}

Micros PgTx::Now(Micros caller) {
  if (clock_ == PgClock::kCaller) return caller;
  if (clock_read_) {
    const Micros now = *clock_read_;
    clock_read_.reset();
    return now;
  }
  return Run("now").Int(0, 0);
}

pg::Rows PgTx::RunThenReadClock(const char* name, pg::Params params) {
  clock_read_.reset();
  if (clock_ == PgClock::kCaller) return conn_.ExecPrepared(name, params);
  std::vector<pg::Rows> rows =
      conn_.ExecPreparedAll({{name, std::move(params)}, {"now", pg::Params()}});
  clock_read_ = rows[1].Int(0, 0);
  return std::move(rows[0]);
}

std::optional<JobRecord> PgTx::OneJob(const Rows& rows) {
  if (rows.empty()) return std::nullopt;
  return RowToJob(rows, 0);
}

std::optional<QueueRow> PgTx::OneQueue(const Rows& rows) {
  if (rows.empty()) return std::nullopt;
  return RowToQueue(rows, 0);
}

BucketState PgTx::OneBucket(const Rows& s) {
  BucketState b;
  if (!s.empty()) {
    b.tat = ScheduleInstant{s.Int(0, 0), s.Int(0, 1)};
    b.queued_count = s.Int(0, 2);
    b.queued_cost = s.Int(0, 3);
    b.leased = s.Int(0, 4);
  }
  return b;
}

// ---- Queues ------------------------------------------------------------------------

std::optional<QueueRow> PgTx::LoadQueue(const std::string& name) {
  // A queue this transaction holds the lock of cannot have changed since it was read.
  if (auto it = locked_queues_.find(name); it != locked_queues_.end()) return it->second;
  return OneQueue(Run("select_queue", name));
}

std::optional<QueueRow> PgTx::LockQueue(const std::string& name) {
  auto row = OneQueue(RunThenReadClock("lock_queue", pg::Params(name)));
  if (row) locked_queues_.insert_or_assign(name, *row);
  return row;
}

void PgTx::LockQueueBuckets(const std::string& name) { Run("lock_queue_buckets", name); }

bool PgTx::QueueExists(const std::string& name) { return !Run("queue_exists", name).empty(); }

QueueStats PgTx::LoadQueueStats(const std::string& name) {
  return RowToStats(Run("queue_stats", name), 0, 0);
}

std::vector<std::pair<QueueRow, QueueStats>> PgTx::ListQueues() {
  std::vector<std::pair<QueueRow, QueueStats>> out;
  Rows s = Run("list_queues");
  for (int r = 0; r < s.size(); ++r) out.emplace_back(RowToQueue(s, r), RowToStats(s, r, 4));
  return out;
}

void PgTx::UpsertQueue(const std::string& name, const std::string& policy, Micros now) {
  locked_queues_.erase(name);
  Run("upsert_queue", name, policy, now);
}

bool PgTx::SetPaused(const std::string& name, bool paused, Micros now) {
  locked_queues_.erase(name);
  return Run("set_paused", name, paused, now).affected() > 0;
}

int64_t PgTx::QueueBusy(const std::string& name) { return Run("queue_busy", name).Int(0, 0); }

bool PgTx::DeleteQueue(const std::string& name) {
  locked_queues_.erase(name);
  return Run("delete_queue", name).affected() > 0;
}

// ---- Buckets -----------------------------------------------------------------------

BucketState PgTx::LoadBucket(const std::string& queue, const std::string& tenant) {
  return OneBucket(Run("select_bucket", queue, tenant));
}

BucketState PgTx::LockBucket(const std::string& queue, const std::string& tenant) {
  Later("lock_bucket_key", queue, tenant);  // one round trip with the read that follows
  return OneBucket(RunThenReadClock("lock_bucket", pg::Params(queue, tenant)));
}

std::map<std::string, BucketState> PgTx::LockBuckets(const std::string& queue,
                                                     const std::vector<std::string>& tenants) {
  std::map<std::string, BucketState> out;
  if (tenants.size() == 1) {  // the usual case: two short statements
    Later("lock_bucket_key", queue, tenants.front());
    out.emplace(tenants.front(),
                OneBucket(RunThenReadClock("select_bucket", pg::Params(queue, tenants.front()))));
    return out;
  }
  const std::string names = pg::ArrayLiteral({tenants.begin(), tenants.end()});
  Later("lock_bucket_keys", queue, names);
  for (const std::string& t : tenants) out.emplace(t, BucketState{});
  Rows s = RunThenReadClock("select_buckets", pg::Params(queue, names));
  for (int r = 0; r < s.size(); ++r) {
    BucketState& b = out[s.Text(r, 0)];
    b.tat = ScheduleInstant{s.Int(r, 1), s.Int(r, 2)};
    b.queued_count = s.Int(r, 3);
    b.queued_cost = s.Int(r, 4);
    b.leased = s.Int(r, 5);
  }
  return out;
}

namespace {

// Heads read per bucket by ready_buckets: the head and the job after it, so a bucket
// that releases twice in a pass needs no read of its own.
constexpr int64_t kHeadsPerBucket = 2;

// The rows of ready_buckets and unblocked_buckets: by bucket, then FIFO (one row of NULL
// job columns for a bucket with no job available).
std::vector<ReadyBucketRow> ReadyFromRows(const Rows& s) {
  std::vector<ReadyBucketRow> out;
  for (int r = 0; r < s.size(); ++r) {
    if (out.empty() || out.back().tenant != s.Text(r, 0)) {
      ReadyBucketRow& b = out.emplace_back();
      b.tenant = s.Text(r, 0);
      b.tat = ScheduleInstant{s.Int(r, 1), s.Int(r, 2)};
      b.leased = s.Int(r, 3);
      b.queued = s.Int(r, 4);
      b.admitted = s.Int(r, 5);
      b.ready_at = s.Int(r, 6);
    }
    ReadyBucketRow& b = out.back();
    if (s.IsNull(r, 7)) continue;
    b.heads.push_back(HeadRow{s.Int(r, 7), s.Int(r, 8), s.OptInt(r, 9)});
    b.more = static_cast<int64_t>(b.heads.size()) >= kHeadsPerBucket;
  }
  return out;
}

}  // namespace

std::vector<ReadyBucketRow> PgTx::ReadyBuckets(const std::string& queue, Micros now,
                                               Micros after_ready, const std::string& after_tenant,
                                               int64_t limit) {
  return ReadyFromRows(
      Run("ready_buckets", queue, now, after_ready, after_tenant, limit, kHeadsPerBucket));
}

std::vector<ReadyBucketRow> PgTx::UnblockedBuckets(const std::string& queue, Micros now) {
  return ReadyFromRows(Run("unblocked_buckets", queue, now, kHeadsPerBucket));
}

ReleaseInputs PgTx::ReadForRelease(const std::string& queue, Micros now, int64_t page, bool index,
                                   bool stats) {
  clock_read_.reset();
  std::vector<std::pair<const char*, pg::Params>> reads;
  if (stats) reads.emplace_back("queue_stats", pg::Params(queue));
  if (index) {
    reads.emplace_back("ready_buckets", pg::Params(queue, now, std::numeric_limits<Micros>::min(),
                                                   std::string(), page, kHeadsPerBucket));
    reads.emplace_back("unblocked_buckets", pg::Params(queue, now, kHeadsPerBucket));
  }
  reads.emplace_back("next_available", pg::Params(queue, now));
  std::vector<Rows> rows = conn_.ExecPreparedAll(std::move(reads));
  ReleaseInputs in;
  size_t at = 0;
  if (stats) in.stats = RowToStats(rows[at++], 0, 0);
  if (index) {
    in.page = ReadyFromRows(rows[at++]);
    in.unblocked = ReadyFromRows(rows[at++]);
  }
  if (!rows.back().empty()) in.next_available = rows.back().OptInt(0, 0);
  return in;
}

std::vector<HeadRow> PgTx::BucketHeadsAfter(const std::string& queue, const std::string& tenant,
                                            int64_t after_seq, Micros now, int64_t limit) {
  std::vector<HeadRow> out;
  Rows s = Run("bucket_heads_after", queue, tenant, after_seq, now, limit);
  for (int r = 0; r < s.size(); ++r)
    out.push_back(HeadRow{s.Int(r, 0), s.Int(r, 1), s.OptInt(r, 2)});
  return out;
}

std::vector<BucketRow> PgTx::ListBuckets(const std::string& queue) {
  std::vector<BucketRow> out;
  Rows s = Run("list_buckets", queue);
  for (int r = 0; r < s.size(); ++r) {
    BucketRow b;
    b.tenant = s.Text(r, 0);
    b.queued = s.Int(r, 1);
    b.queued_cost = s.Int(r, 2);
    b.leased = s.Int(r, 3);
    b.tat = ScheduleInstant{s.Int(r, 4), s.Int(r, 5)};
    b.oldest_queued_at = s.OptInt(r, 6);
    b.totals =
        Totals{s.Int(r, 7), s.Int(r, 8), s.Int(r, 9), s.Int(r, 10), s.Int(r, 11), s.Int(r, 12)};
    out.push_back(std::move(b));
  }
  return out;
}

std::vector<std::pair<std::string, ScheduleInstant>> PgTx::BacklogBuckets(
    const std::string& queue) {
  std::vector<std::pair<std::string, ScheduleInstant>> out;
  Rows s = Run("backlog_buckets", queue);
  for (int r = 0; r < s.size(); ++r) {
    out.emplace_back(s.Text(r, 0), ScheduleInstant{s.Int(r, 1), s.Int(r, 2)});
  }
  return out;
}

std::vector<std::pair<std::string, BacklogJob>> PgTx::BacklogJobs(const std::string& queue) {
  std::vector<std::pair<std::string, BacklogJob>> out;
  Rows s = Run("backlog_jobs", queue);
  for (int r = 0; r < s.size(); ++r) {
    out.emplace_back(s.Text(r, 0), BacklogJob{s.Int(r, 1), s.OptInt(r, 2)});
  }
  return out;
}

void PgTx::BucketAdmitted(const std::string& queue, const std::string& tenant, int64_t cost,
                          Micros ready_bound) {
  Later("bucket_admitted", queue, tenant, cost, ready_bound);
}

void PgTx::BucketsAdmitted(const std::string& queue, const std::vector<AdmittedJob>& jobs) {
  if (jobs.empty()) return;
  if (jobs.size() == 1) {
    const AdmittedJob& j = jobs.front();
    return BucketAdmitted(queue, j.tenant, j.cost, j.ready_bound);
  }
  std::vector<std::optional<std::string>> tenants, costs, bounds;
  for (const AdmittedJob& j : jobs) {
    tenants.emplace_back(j.tenant);
    costs.emplace_back(std::to_string(j.cost));
    bounds.emplace_back(std::to_string(j.ready_bound));
  }
  Later("buckets_admitted", queue, pg::ArrayLiteral(tenants), pg::ArrayLiteral(costs),
        pg::ArrayLiteral(bounds));
}

void PgTx::DirtyQueueBuckets(const std::string& queue) { Later("dirty_queue_buckets", queue); }

void PgTx::BucketReleased(const std::string& queue, const BucketRelease& r) {
  Later("bucket_released", queue, r.tenant, r.tat.us, r.tat.frac, r.cost, r.count, r.ready_at,
        r.seen_queued, r.seen_admitted);
}

void PgTx::BucketsReleased(const std::string& queue, const std::vector<BucketRelease>& releases) {
  if (releases.empty()) return;
  if (releases.size() == 1) return BucketReleased(queue, releases.front());
  std::vector<std::vector<std::optional<std::string>>> cols(8);
  for (const BucketRelease& r : releases) {
    cols[0].emplace_back(r.tenant);
    cols[1].emplace_back(std::to_string(r.tat.us));
    cols[2].emplace_back(std::to_string(r.tat.frac));
    cols[3].emplace_back(std::to_string(r.cost));
    cols[4].emplace_back(std::to_string(r.count));
    cols[5].emplace_back(std::to_string(r.ready_at));
    cols[6].emplace_back(std::to_string(r.seen_queued));
    cols[7].emplace_back(std::to_string(r.seen_admitted));
  }
  Later("buckets_released", queue, pg::ArrayLiteral(cols[0]), pg::ArrayLiteral(cols[1]),
        pg::ArrayLiteral(cols[2]), pg::ArrayLiteral(cols[3]), pg::ArrayLiteral(cols[4]),
        pg::ArrayLiteral(cols[5]), pg::ArrayLiteral(cols[6]), pg::ArrayLiteral(cols[7]));
}

void PgTx::BucketLeaseEnded(const std::string& queue, const std::string& tenant, LeaseEnd end) {
  Later("bucket_lease_ended", queue, tenant, Flag(end.succeeded), Flag(end.failed),
        Flag(end.timed_out));
}

void PgTx::BucketLeasesSucceeded(const std::vector<const JobRecord*>& jobs) {
  if (jobs.empty()) return;
  if (jobs.size() == 1) {
    return BucketLeaseEnded(jobs.front()->queue, jobs.front()->tenant, LeaseEnd{.succeeded = true});
  }
  std::vector<std::optional<std::string>> queues, tenants;
  for (const JobRecord* j : jobs) {
    queues.emplace_back(j->queue);
    tenants.emplace_back(j->tenant);
  }
  Later("bucket_leases_succeeded", pg::ArrayLiteral(queues), pg::ArrayLiteral(tenants));
}

void PgTx::BucketRequeued(const std::string& queue, const std::string& tenant, int64_t cost,
                          bool timed_out) {
  Later("bucket_requeued", queue, tenant, cost, Flag(timed_out));
}

void PgTx::BucketDequeued(const std::string& queue, const std::string& tenant, int64_t cost,
                          bool expired) {
  Later("bucket_dequeued", queue, tenant, cost, Flag(expired));
}

void PgTx::FoldCounters() { Run("fold_bucket_deltas"); }

// ---- Jobs --------------------------------------------------------------------------

void PgTx::InsertJob(const JobRecord& j) {
  Later("insert_job", j.id, j.queue, j.tenant, j.payload, j.cost, j.max_attempts, j.lease_ms,
        j.policy_version, j.created_at, j.not_before, j.available_at, j.deadline, j.estimated_start,
        j.traceparent);
}

void PgTx::InsertJobs(const std::vector<JobRecord>& jobs) {
  if (jobs.empty()) return;
  if (jobs.size() == 1) return InsertJob(jobs.front());
  constexpr size_t kColumns = 14;
  std::vector<std::vector<std::optional<std::string>>> cols(kColumns);
  for (auto& c : cols) c.reserve(jobs.size());
  auto num = [](int64_t v) { return std::optional<std::string>(std::to_string(v)); };
  auto opt = [&](const std::optional<int64_t>& v) {
    return v ? num(*v) : std::optional<std::string>();
  };
  for (const JobRecord& j : jobs) {
    cols[0].emplace_back(j.id);
    cols[1].emplace_back(j.queue);
    cols[2].emplace_back(j.tenant);
    cols[3].emplace_back(j.payload);
    cols[4].push_back(num(j.cost));
    cols[5].push_back(num(j.max_attempts));
    cols[6].push_back(num(j.lease_ms));
    cols[7].push_back(num(j.policy_version));
    cols[8].push_back(num(j.created_at));
    cols[9].push_back(opt(j.not_before));
    cols[10].push_back(num(j.available_at));
    cols[11].push_back(opt(j.deadline));
    cols[12].push_back(num(j.estimated_start));
    cols[13].push_back(j.traceparent);
  }
  pg::Params params;
  for (const auto& c : cols) params.Add(pg::ArrayLiteral(c));
  conn_.Defer("insert_jobs", std::move(params));
}

std::optional<JobRecord> PgTx::SelectJob(const std::string& id) {
  return OneJob(Run("select_job", id));
}

bool PgTx::JobExists(const std::string& id) { return !Run("job_exists", id).empty(); }

int64_t PgTx::CostAhead(const std::string& queue, const std::string& tenant, const std::string& id,
                        Micros now) {
  return Run("cost_ahead", queue, tenant, id, now).Int(0, 0);
}

std::optional<Micros> PgTx::NextAvailable(const std::string& queue, Micros now) {
  Rows s = Run("next_available", queue, now);
  if (s.empty()) return std::nullopt;
  return s.OptInt(0, 0);
}

std::optional<JobRecord> PgTx::LeaseJob(int64_t seq, const std::string& lease_id,
                                        Micros released_at, std::optional<int64_t> lease_ms,
                                        const std::string& worker_id) {
  return OneJob(Run("lease_job", seq, lease_id, released_at, lease_ms, worker_id));
}

std::vector<std::optional<JobRecord>> PgTx::LeaseJobs(const std::vector<LeaseGrant>& grants) {
  std::vector<std::optional<JobRecord>> out(grants.size());
  if (grants.empty()) return out;
  if (grants.size() == 1) {
    const LeaseGrant& g = grants.front();
    out[0] = LeaseJob(g.seq, g.lease_id, g.released_at, g.lease_ms, g.worker_id);
    return out;
  }
  std::vector<std::vector<std::optional<std::string>>> cols(5);
  std::map<int64_t, size_t> index;  // seq -> grant
  for (size_t i = 0; i < grants.size(); ++i) {
    const LeaseGrant& g = grants[i];
    index.emplace(g.seq, i);
    cols[0].emplace_back(std::to_string(g.seq));
    cols[1].emplace_back(g.lease_id);
    cols[2].emplace_back(std::to_string(g.released_at));
    cols[3].push_back(g.lease_ms ? std::optional<std::string>(std::to_string(*g.lease_ms))
                                 : std::nullopt);
    cols[4].emplace_back(g.worker_id);
  }
  Rows s = Run("lease_jobs", pg::ArrayLiteral(cols[0]), pg::ArrayLiteral(cols[1]),
               pg::ArrayLiteral(cols[2]), pg::ArrayLiteral(cols[3]), pg::ArrayLiteral(cols[4]));
  for (int r = 0; r < s.size(); ++r) {
    if (auto it = index.find(s.Int(r, 0)); it != index.end()) out[it->second] = RowToJob(s, r, 1);
  }
  return out;
}

std::optional<JobRecord> PgTx::CompleteJob(const std::string& id, const std::string& lease_id,
                                           const std::optional<std::string>& result, Micros now) {
  return OneJob(Run("complete_job", id, lease_id, result, now));
}

std::vector<std::optional<JobRecord>> PgTx::CompleteJobs(
    const std::vector<CompleteItem>& items, const std::optional<std::vector<std::string>>& queues,
    Micros now) {
  std::vector<std::optional<JobRecord>> out(items.size());
  if (items.empty()) return out;
  std::vector<std::optional<std::string>> ids, leases, results;
  std::multimap<std::string, size_t> index;  // id -> item, in order
  for (size_t i = 0; i < items.size(); ++i) {
    ids.emplace_back(items[i].id);
    leases.emplace_back(items[i].lease_id);
    results.push_back(items[i].result);
    index.emplace(items[i].id, i);
  }
  std::optional<std::string> allowed;
  if (queues) allowed = pg::ArrayLiteral({queues->begin(), queues->end()});
  Rows s = Run("complete_jobs", pg::ArrayLiteral(ids), pg::ArrayLiteral(leases),
               pg::ArrayLiteral(results), now, allowed);
  for (int r = 0; r < s.size(); ++r) {
    // An id named twice was completed once: by its first item with the job's lease.
    const std::string lease = s.Text(r, 0);
    JobRecord job = RowToJob(s, r, 1);
    auto [from, to] = index.equal_range(job.id);
    for (auto it = from; it != to; ++it) {
      if (items[it->second].lease_id == lease) {
        out[it->second] = std::move(job);
        break;
      }
    }
  }
  return out;
}

std::optional<LeaseRow> PgTx::SelectLiveLease(const std::string& id, const std::string& lease_id,
                                              Micros now) {
  Rows s = Run("select_live_lease", id, lease_id, now);
  if (s.empty()) return std::nullopt;
  return RowToLease(s, 0);
}

std::optional<JobRecord> PgTx::EndAttempt(int64_t seq, bool retry,
                                          std::optional<Micros> available_at, Micros now,
                                          const std::string& error) {
  return OneJob(Run("end_attempt", seq, retry, available_at, now, error));
}

std::vector<LeaseRow> PgTx::LeasesDue(Micros now) {
  std::vector<LeaseRow> out;
  Rows s = Run("leases_due", now);
  for (int r = 0; r < s.size(); ++r) out.push_back(RowToLease(s, r));
  return out;
}

std::vector<ExpiredRow> PgTx::ExpireDue(Micros now) {
  std::vector<ExpiredRow> out;
  Rows s = Run("expire_due", now);
  for (int r = 0; r < s.size(); ++r) {
    out.push_back(ExpiredRow{s.Text(r, 0), s.Text(r, 1), s.Int(r, 2)});
  }
  return out;
}

std::optional<JobRecord> PgTx::Heartbeat(const std::string& id, const std::string& lease_id,
                                         std::optional<int64_t> extend_ms, Micros now) {
  return OneJob(Run("heartbeat", id, lease_id, extend_ms, now));
}

std::optional<JobRecord> PgTx::Cancel(const std::string& id, Micros now) {
  return OneJob(Run("cancel_job", id, now));
}

std::optional<JobRecord> PgTx::Retry(const std::string& id, Micros now) {
  return OneJob(Run("retry_job", id, now));
}

std::vector<std::pair<JobRecord, int64_t>> PgTx::ListJobs(const JobFilter& f) {
  std::vector<std::pair<JobRecord, int64_t>> out;
  std::optional<std::string> state;
  if (f.state) state = std::string(JobStateName(*f.state));
  Rows s = Run("list_jobs", f.after_seq, f.tenant, f.queue, state, f.limit);
  for (int r = 0; r < s.size(); ++r) {
    out.emplace_back(RowToJob(s, r), s.Int(r, kJobColumnCount));
  }
  return out;
}

int64_t PgTx::CleanJobs(Micros finished_before, int64_t limit) {
  return Run("clean_jobs", finished_before, limit).affected();
}

void PgTx::CleanIdempotencyKeys(Micros created_before, int64_t limit) {
  Run("clean_idempotency_keys", created_before, limit);
}

std::optional<IdempotencyRow> PgTx::SelectIdempotency(const std::string& tenant,
                                                      const std::string& key) {
  Rows s = Run("select_idempotency", tenant, key);
  if (s.empty()) return std::nullopt;
  return IdempotencyRow{s.Text(0, 0), s.Text(0, 1)};
}

void PgTx::InsertIdempotency(const std::string& tenant, const std::string& key,
                             const std::string& body_hash, const std::string& job_id, Micros now) {
  Later("insert_idempotency", tenant, key, body_hash, job_id, now);
}

void PgTx::Probe(Micros now) { Run("probe", now); }

// ---- Tokens ------------------------------------------------------------------------

void PgTx::InsertToken(const TokenRecord& t) {
  Run("insert_token", t.id, t.secret_hash, t.tenant, ScopesToJson(t.scopes), QueuesToJson(t.queues),
      t.created_at);
}

std::optional<TokenRecord> PgTx::SelectToken(const std::string& id) {
  Rows s = Run("select_token", id);
  if (s.empty()) return std::nullopt;
  return RowToToken(s, 0);
}

std::vector<TokenRecord> PgTx::ListTokens() {
  std::vector<TokenRecord> out;
  Rows s = Run("list_tokens");
  for (int r = 0; r < s.size(); ++r) out.push_back(RowToToken(s, r));
  return out;
}

std::optional<TokenRecord> PgTx::RevokeToken(const std::string& id, Micros now) {
  Rows s = Run("revoke_token", id, now);
  if (s.empty()) return std::nullopt;
  return RowToToken(s, 0);
}

// ---- Intake limiters ----------------------------------------------------------------

std::optional<StoredLimit> PgTx::LockLimit(const std::string& key) {
  Rows r = RunThenReadClock("lock_limit", pg::Params(key));
  if (r.empty()) return std::nullopt;
  return StoredLimit{r.Text(0, 0), r.Int(0, 1)};
}

bool PgTx::InsertLimit(const std::string& key, const std::string& state, Micros expires_at) {
  return Run("insert_limit", key, state, expires_at).affected() == 1;
}

void PgTx::UpdateLimit(const std::string& key, const std::string& state, Micros expires_at) {
  Later("update_limit", key, state, expires_at);
}

int64_t PgTx::CleanLimits(Micros now, int64_t limit) {
  return Run("clean_limits", now, limit).affected();
}

std::optional<StoredLayers> PgTx::SelectLayers() {
  Rows r = Run("select_layers");
  if (r.empty()) return std::nullopt;
  return StoredLayers{r.Int(0, 0), r.Text(0, 1)};
}

int64_t PgTx::PutLayers(const std::string& body, Micros now) {
  return Run("put_layers", body, now).Int(0, 0);
}

LimitStats PgTx::SelectLimitStats(Micros now) {
  Rows r = Run("limit_stats", now);
  return LimitStats{r.Int(0, 0), r.Int(0, 1)};
}

// ---- Config sources ------------------------------------------------------------------

std::optional<std::string> PgTx::ConfigSource(const std::string& key) {
  Rows r = Run("select_config_source", key);
  if (r.empty()) return std::nullopt;
  return r.Text(0, 0);
}

void PgTx::SetConfigSource(const std::string& key, const std::optional<std::string>& file) {
  if (file) {
    Run("set_config_source", key, *file);
  } else {
    Run("clear_config_source", key);
  }
}

std::vector<std::pair<std::string, std::string>> PgTx::ConfigSources() {
  std::vector<std::pair<std::string, std::string>> out;
  Rows r = Run("list_config_sources");
  for (int i = 0; i < r.size(); ++i) out.emplace_back(r.Text(i, 0), r.Text(i, 1));
  return out;
}

}  // namespace sluice
