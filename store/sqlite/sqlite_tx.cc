#include "store/sqlite/sqlite_tx.h"

#include <algorithm>
#include <iterator>
#include <map>

#include "common/random.h"
#include "store/engine/token_text.h"
#include "store/sql_files.h"

namespace sluice {
namespace {

using sqlite::Stmt;

constexpr const char* kStatementsFile = "store/sql/sqlite/statements.sql";

// The columns of select_job, from `at` on.
JobRecord RowToJob(const Stmt& s, int at = 0) {
  JobRecord j;
  j.id = s.Text(at + 0);
  j.queue = s.Text(at + 1);
  j.tenant = s.Text(at + 2);
  j.state = ParseJobState(s.Text(at + 3)).value_or(JobState::kQueued);
  j.payload = s.Text(at + 4);
  j.cost = s.Int(at + 5);
  j.attempt = s.Int(at + 6);
  j.max_attempts = s.Int(at + 7);
  j.lease_ms = s.Int(at + 8);
  j.policy_version = s.Int(at + 9);
  j.created_at = s.Int(at + 10);
  j.not_before = s.OptInt(at + 11);
  j.available_at = s.Int(at + 12);
  j.deadline = s.OptInt(at + 13);
  j.estimated_start = s.Int(at + 14);
  j.lease_id = s.OptText(at + 15);
  j.lease_expires_at = s.OptInt(at + 16);
  j.result = s.OptText(at + 17);
  j.errors = s.Text(at + 18);
  j.finished_at = s.OptInt(at + 19);
  j.leased_at = s.OptInt(at + 20);
  j.traceparent = s.OptText(at + 21);
  return j;
}
constexpr int kJobColumnCount = 22;

QueueRow RowToQueue(const Stmt& s) {
  return QueueRow{s.Text(0), s.Text(1), s.Int(2), s.Int(3) != 0};
}

// Nine sums from column `at`: queued, queued cost, leased, then the six totals.
QueueStats RowToStats(const Stmt& s, int at) {
  QueueStats q{s.Int(at), s.Int(at + 1), s.Int(at + 2), {}};
  q.totals = Totals{s.Int(at + 3), s.Int(at + 4), s.Int(at + 5),
                    s.Int(at + 6), s.Int(at + 7), s.Int(at + 8)};
  return q;
}

LeaseRow RowToLease(const Stmt& s) {
  return LeaseRow{s.Int(0), s.Text(1), s.Text(2), s.Int(3), s.Int(4), s.Int(5), s.OptInt(6)};
}

TokenRecord RowToToken(const Stmt& s) {
  TokenRecord t;
  t.id = s.Text(0);
  t.secret_hash = s.Text(1);
  t.tenant = s.OptText(2);
  t.scopes = ScopesFromJson(s.Text(3));
  t.queues = QueuesFromJson(s.OptText(4));
  t.created_at = s.Int(5);
  t.revoked_at = s.OptInt(6);
  t.revoked = t.revoked_at.has_value();
  return t;
}

int64_t Flag(bool b) { return b ? 1 : 0; }

}  // namespace

const SqliteStatements& SqliteStatements::Get() {
  static const SqliteStatements statements(
      Statements(FindSqlFile(kStatementsFile).value_or(""), kStatementsFile));
  return statements;
}

SqliteStatements::SqliteStatements(const Statements& file) {
#define SLUICE_LOOKUP(name) name = file.Get(#name);
  SLUICE_SQLITE_STATEMENTS(SLUICE_LOOKUP)
#undef SLUICE_LOOKUP
}

std::optional<JobRecord> SqliteTx::OneJob(Stmt& s) {
  if (!s.Step()) return std::nullopt;
  return RowToJob(s);
}

// ---- Queues ------------------------------------------------------------------------

std::optional<QueueRow> SqliteTx::LoadQueue(const std::string& name) {
  if (queue_rows_) {
    if (const std::optional<QueueRow>* cached = queue_rows_->Find(name)) return *cached;
  }
  Stmt s = db_.Prepare(sql_.select_queue);
  s.BindAll(name);
  std::optional<QueueRow> row;
  if (s.Step()) row = RowToQueue(s);
  if (queue_rows_) queue_rows_->Put(name, row);
  return row;
}

bool SqliteTx::QueueExists(const std::string& name) {
  Stmt s = db_.Prepare(sql_.queue_exists);
  s.BindAll(name);
  return s.Step();
}

QueueStats SqliteTx::LoadQueueStats(const std::string& name) {
  Stmt s = db_.Prepare(sql_.queue_stats);
  s.BindAll(name);
  s.Step();
  return RowToStats(s, 0);
}

std::vector<std::pair<QueueRow, QueueStats>> SqliteTx::ListQueues() {
  std::vector<std::pair<QueueRow, QueueStats>> out;
  Stmt s = db_.Prepare(sql_.list_queues);
  while (s.Step()) out.emplace_back(RowToQueue(s), RowToStats(s, 4));
  return out;
}

void SqliteTx::UpsertQueue(const std::string& name, const std::string& policy, Micros now) {
  QueueChanging();
  db_.Prepare(sql_.upsert_queue).BindAll(name, policy, now).Exec();
}

bool SqliteTx::SetPaused(const std::string& name, bool paused, Micros now) {
  QueueChanging();
  return db_.Prepare(sql_.set_paused).BindAll(name, Flag(paused), now).Exec() > 0;
}

int64_t SqliteTx::QueueBusy(const std::string& name) {
  Stmt s = db_.Prepare(sql_.queue_busy);
  s.BindAll(name);
  s.Step();
  return s.Int(0);
}

bool SqliteTx::DeleteQueue(const std::string& name) {
  QueueChanging();
  return db_.Prepare(sql_.delete_queue).BindAll(name).Exec() > 0;
}

// ---- Buckets -----------------------------------------------------------------------

BucketState SqliteTx::LoadBucket(const std::string& queue, const std::string& tenant) {
  Stmt s = db_.Prepare(sql_.select_bucket);
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

// Each bucket's head, and the job after it when that one is next too (statements.sql):
// reading on costs no round trip here.
std::vector<ReadyBucketRow> SqliteTx::ReadyBuckets(const std::string& queue, Micros now,
                                                   Micros after_ready,
                                                   const std::string& after_tenant, int64_t limit) {
  std::vector<ReadyBucketRow> out;
  Stmt s = db_.Prepare(sql_.ready_buckets);
  s.BindAll(queue, now, after_ready, after_tenant, limit);
  while (s.Step()) {
    ReadyBucketRow& b = out.emplace_back();
    b.tenant = s.Text(0);
    b.tat = ScheduleInstant{s.Int(1), s.Int(2)};
    b.leased = s.Int(3);
    b.queued = s.Int(4);
    b.admitted = s.Int(5);
    b.ready_at = s.Int(6);
    if (!s.IsNull(7)) {
      b.heads.push_back(HeadRow{s.Int(7), s.Int(8), s.OptInt(9)});
      if (!s.IsNull(10)) b.heads.push_back(HeadRow{s.Int(10), s.Int(11), s.OptInt(12)});
      b.more = true;
    }
  }
  return out;
}

std::vector<HeadRow> SqliteTx::BucketHeadsAfter(const std::string& queue, const std::string& tenant,
                                                int64_t after_seq, Micros now, int64_t limit) {
  // The bucket's fresh jobs and its waiting ones, each in seq order, merged: two plain
  // index walks cost less than SQLite's merge of a compound SELECT.
  std::vector<HeadRow> fresh, waiting, out;
  Stmt f = db_.Prepare(sql_.bucket_heads_fresh);
  f.BindAll(queue, tenant, after_seq, limit);
  while (f.Step()) fresh.push_back(HeadRow{f.Int(0), f.Int(1), f.OptInt(2)});
  CursorNews& news = cursor_news_[{queue, tenant}];
  news.fresh_after = after_seq;
  news.fresh.clear();
  for (const HeadRow& h : fresh) news.fresh.push_back(h.seq);
  Stmt w = db_.Prepare(sql_.bucket_heads_waiting);
  w.BindAll(queue, tenant, after_seq, now, limit);
  while (w.Step()) waiting.push_back(HeadRow{w.Int(0), w.Int(1), w.OptInt(2)});
  if (waiting.empty()) return fresh;
  std::merge(fresh.begin(), fresh.end(), waiting.begin(), waiting.end(), std::back_inserter(out),
             [](const HeadRow& a, const HeadRow& b) { return a.seq < b.seq; });
  if (static_cast<int64_t>(out.size()) > limit) out.resize(static_cast<size_t>(limit));
  return out;
}

std::vector<BucketRow> SqliteTx::ListBuckets(const std::string& queue) {
  std::vector<BucketRow> out;
  Stmt s = db_.Prepare(sql_.list_buckets);
  s.BindAll(queue);
  while (s.Step()) {
    BucketRow b;
    b.tenant = s.Text(0);
    b.queued = s.Int(1);
    b.queued_cost = s.Int(2);
    b.leased = s.Int(3);
    b.tat = ScheduleInstant{s.Int(4), s.Int(5)};
    b.oldest_queued_at = s.OptInt(6);
    b.totals = Totals{s.Int(7), s.Int(8), s.Int(9), s.Int(10), s.Int(11), s.Int(12)};
    out.push_back(std::move(b));
  }
  return out;
}

std::vector<std::pair<std::string, ScheduleInstant>> SqliteTx::BacklogBuckets(
    const std::string& queue) {
  std::vector<std::pair<std::string, ScheduleInstant>> out;
  Stmt s = db_.Prepare(sql_.backlog_buckets);
  s.BindAll(queue);
  while (s.Step()) out.emplace_back(s.Text(0), ScheduleInstant{s.Int(1), s.Int(2)});
  return out;
}

std::vector<std::pair<std::string, BacklogJob>> SqliteTx::BacklogJobs(const std::string& queue) {
  std::vector<std::pair<std::string, BacklogJob>> out;
  Stmt s = db_.Prepare(sql_.backlog_jobs);
  s.BindAll(queue);
  while (s.Step()) out.emplace_back(s.Text(0), BacklogJob{s.Int(1), s.OptInt(2)});
  return out;
}

void SqliteTx::BucketAdmitted(const std::string& queue, const std::string& tenant, int64_t cost,
                              Micros ready_bound) {
  db_.Prepare(sql_.bucket_admitted).BindAll(queue, tenant, cost, ready_bound, 1).Exec();
}

void SqliteTx::BucketsAdmitted(const std::string& queue, const std::vector<AdmittedJob>& jobs) {
  // A batch of submits often holds several jobs of one bucket (they come sorted by
  // tenant): one upsert each, with their count, their cost and the lowest bound.
  for (size_t i = 0; i < jobs.size();) {
    int64_t count = 0, cost = 0;
    Micros bound = jobs[i].ready_bound;
    size_t k = i;
    for (; k < jobs.size() && jobs[k].tenant == jobs[i].tenant; ++k) {
      ++count;
      cost += jobs[k].cost;
      bound = std::min(bound, jobs[k].ready_bound);
    }
    db_.Prepare(sql_.bucket_admitted).BindAll(queue, jobs[i].tenant, cost, bound, count).Exec();
    i = k;
  }
}

void SqliteTx::DirtyQueueBuckets(const std::string& queue) {
  db_.Prepare(sql_.dirty_queue_buckets).BindAll(queue).Exec();
}

void SqliteTx::BucketReleased(const std::string& queue, const BucketRelease& r) {
  // The release pass leases a bucket's heads in order, so every fresh job of the bucket
  // below the last one leased has left the queue: the cursor may pass them all. It goes
  // on to the next fresh job the pass read, if it read one past them: the fresh jobs it
  // read after a head it released are every fresh job up to the last of them. The job
  // at the cursor is then the bucket's next fresh head (statements.sql, ready_buckets).
  int64_t cursor = 0;
  if (auto it = cursor_news_.find({queue, r.tenant}); it != cursor_news_.end()) {
    const CursorNews& news = it->second;
    cursor = news.leased_upto;
    if (cursor > 0 && news.fresh_after < cursor) {
      auto next = std::lower_bound(news.fresh.begin(), news.fresh.end(), cursor);
      if (next != news.fresh.end()) cursor = *next;
    }
  }
  db_.Prepare(sql_.bucket_released)
      .BindAll(queue, r.tenant, r.tat.us, r.tat.frac, r.cost, r.count, r.ready_at, r.seen_queued,
               r.seen_admitted, cursor)
      .Exec();
}

void SqliteTx::BucketLeaseEnded(const std::string& queue, const std::string& tenant, LeaseEnd end) {
  db_.Prepare(sql_.bucket_lease_ended)
      .BindAll(queue, tenant, Flag(end.succeeded), Flag(end.failed), Flag(end.timed_out))
      .Exec();
}

void SqliteTx::BucketLeasesSucceeded(const std::vector<const JobRecord*>& jobs) {
  // A batch of acks usually holds a few buckets' jobs, interleaved.
  std::map<std::pair<std::string_view, std::string_view>, int64_t> ended;
  for (const JobRecord* j : jobs) ++ended[{j->queue, j->tenant}];
  for (const auto& [bucket, n] : ended) {
    db_.Prepare(sql_.bucket_leases_succeeded).BindAll(bucket.first, bucket.second, n).Exec();
  }
}

void SqliteTx::BucketRequeued(const std::string& queue, const std::string& tenant, int64_t cost,
                              bool timed_out) {
  db_.Prepare(sql_.bucket_requeued).BindAll(queue, tenant, cost, Flag(timed_out)).Exec();
}

void SqliteTx::BucketDequeued(const std::string& queue, const std::string& tenant, int64_t cost,
                              bool expired) {
  db_.Prepare(sql_.bucket_dequeued).BindAll(queue, tenant, cost, Flag(expired)).Exec();
}

// ---- Jobs --------------------------------------------------------------------------

void SqliteTx::InsertJob(const JobRecord& j) {
  db_.Prepare(sql_.insert_job)
      .BindAll(j.id, j.queue, j.tenant, j.payload, j.cost, j.max_attempts, j.lease_ms,
               j.policy_version, j.created_at, j.not_before, j.available_at, j.deadline,
               j.estimated_start, j.traceparent)
      .Exec();
}

std::optional<JobRecord> SqliteTx::SelectJob(const std::string& id) {
  Stmt s = db_.Prepare(sql_.select_job);
  s.BindAll(id);
  return OneJob(s);
}

std::optional<JobRecord> SqliteTx::SelectJobBySeq(int64_t seq) {
  Stmt s = db_.Prepare(sql_.select_job_by_seq);
  s.BindAll(seq);
  return OneJob(s);
}

bool SqliteTx::JobExists(const std::string& id) {
  Stmt s = db_.Prepare(sql_.job_exists);
  s.BindAll(id);
  return s.Step();
}

int64_t SqliteTx::CostAhead(const std::string& queue, const std::string& tenant,
                            const std::string& id, Micros now) {
  Stmt s = db_.Prepare(sql_.cost_ahead);
  s.BindAll(queue, tenant, id, now);
  s.Step();
  return s.Int(0);
}

std::optional<Micros> SqliteTx::NextAvailable(const std::string& queue, Micros now) {
  Stmt s = db_.Prepare(sql_.next_available);
  s.BindAll(queue, now);
  if (!s.Step()) return std::nullopt;
  return s.OptInt(0);
}

std::optional<JobRecord> SqliteTx::LeaseJob(int64_t seq, const std::string& lease_id,
                                            Micros released_at, std::optional<int64_t> lease_ms,
                                            const std::string& worker_id) {
  if (db_.Prepare(sql_.lease_job).BindAll(seq, lease_id, released_at, lease_ms, worker_id).Exec() ==
      0) {
    return std::nullopt;
  }
  std::optional<JobRecord> job = SelectJobBySeq(seq);
  if (job) {
    int64_t& upto = cursor_news_[{job->queue, job->tenant}].leased_upto;
    upto = std::max(upto, seq + 1);
  }
  return job;
}

std::optional<JobRecord> SqliteTx::CompleteJob(const std::string& id, const std::string& lease_id,
                                               const std::optional<std::string>& result,
                                               Micros now) {
  return CompleteOne(CompleteItem{id, lease_id, result}, std::nullopt, now);
}

std::optional<JobRecord> SqliteTx::CompleteOne(const CompleteItem& c,
                                               const std::optional<std::string>& allowed,
                                               Micros now) {
  const std::optional<int64_t> seq = SeqOfLeaseId(c.lease_id);
  if (db_.Prepare(sql_.complete_job)
          .BindAll(c.id, c.lease_id, c.result, now, allowed, seq)
          .Exec() == 0) {
    return std::nullopt;
  }
  return seq ? SelectJobBySeq(*seq) : SelectJob(c.id);
}

std::vector<std::optional<JobRecord>> SqliteTx::CompleteJobs(
    const std::vector<CompleteItem>& items, const std::optional<std::vector<std::string>>& queues,
    Micros now) {
  // The queues between commas (statements.sql, complete_job): names hold no comma.
  std::optional<std::string> allowed;
  if (queues) {
    allowed = ",";
    for (const std::string& q : *queues) {
      if (q.find(',') == std::string::npos) *allowed += q + ",";  // else it names no queue
    }
  }
  std::vector<std::optional<JobRecord>> out;
  out.reserve(items.size());
  for (const CompleteItem& c : items) out.push_back(CompleteOne(c, allowed, now));
  return out;
}

std::optional<LeaseRow> SqliteTx::SelectLiveLease(const std::string& id,
                                                  const std::string& lease_id, Micros now) {
  Stmt s = db_.Prepare(sql_.select_live_lease);
  s.BindAll(id, lease_id, now, SeqOfLeaseId(lease_id));
  if (!s.Step()) return std::nullopt;
  return RowToLease(s);
}

std::optional<JobRecord> SqliteTx::EndAttempt(int64_t seq, bool retry,
                                              std::optional<Micros> available_at, Micros now,
                                              const std::string& error) {
  Stmt s = db_.Prepare(sql_.end_attempt);
  s.BindAll(seq, Flag(retry), available_at, now, error);
  return OneJob(s);
}

std::vector<LeaseRow> SqliteTx::LeasesDue(Micros now) {
  std::vector<LeaseRow> out;
  Stmt s = db_.Prepare(sql_.leases_due);
  s.BindAll(now);
  while (s.Step()) out.push_back(RowToLease(s));
  return out;
}

std::vector<ExpiredRow> SqliteTx::ExpireDue(Micros now) {
  std::vector<ExpiredRow> out;
  {
    Stmt any = db_.Prepare(sql_.any_expire_due);  // reset before the UPDATE runs
    any.BindAll(now);
    if (!any.Step()) return out;
  }
  Stmt s = db_.Prepare(sql_.expire_due);
  s.BindAll(now);
  while (s.Step()) out.push_back(ExpiredRow{s.Text(0), s.Text(1), s.Int(2)});
  return out;
}

std::optional<JobRecord> SqliteTx::Heartbeat(const std::string& id, const std::string& lease_id,
                                             std::optional<int64_t> extend_ms, Micros now) {
  Stmt s = db_.Prepare(sql_.heartbeat);
  s.BindAll(id, lease_id, extend_ms, now, SeqOfLeaseId(lease_id));
  return OneJob(s);
}

std::optional<JobRecord> SqliteTx::Cancel(const std::string& id, Micros now) {
  Stmt s = db_.Prepare(sql_.cancel_job);
  s.BindAll(id, now);
  return OneJob(s);
}

std::optional<JobRecord> SqliteTx::Retry(const std::string& id, Micros now) {
  Stmt s = db_.Prepare(sql_.retry_job);
  s.BindAll(id, now);
  std::optional<JobRecord> job = OneJob(s);
  // Queued again at attempt 0 and available from its admission (the clock has not moved
  // since), it is a fresh job, which its bucket's cursor may have passed.
  if (job && job->attempt == 0 && job->available_at == job->created_at) {
    db_.Prepare(sql_.bucket_cursor_back).BindAll(job->queue, job->tenant, id).Exec();
  }
  return job;
}

std::vector<std::pair<JobRecord, int64_t>> SqliteTx::ListJobs(const JobFilter& f) {
  std::vector<std::pair<JobRecord, int64_t>> out;
  Stmt s = db_.Prepare(sql_.list_jobs);
  std::optional<std::string> state;
  if (f.state) state = std::string(JobStateName(*f.state));
  s.BindAll(f.after_seq, f.tenant, f.queue, state, f.limit);
  while (s.Step()) out.emplace_back(RowToJob(s), s.Int(kJobColumnCount));
  return out;
}

int64_t SqliteTx::CleanJobs(Micros finished_before, int64_t limit) {
  return db_.Prepare(sql_.clean_jobs).BindAll(finished_before, limit).Exec();
}

void SqliteTx::CleanIdempotencyKeys(Micros created_before, int64_t limit) {
  db_.Prepare(sql_.clean_idempotency_keys).BindAll(created_before, limit).Exec();
}

std::optional<IdempotencyRow> SqliteTx::SelectIdempotency(const std::string& tenant,
                                                          const std::string& key) {
  Stmt s = db_.Prepare(sql_.select_idempotency);
  s.BindAll(tenant, key);
  if (!s.Step()) return std::nullopt;
  return IdempotencyRow{s.Text(0), s.Text(1)};
}

void SqliteTx::InsertIdempotency(const std::string& tenant, const std::string& key,
                                 const std::string& body_hash, const std::string& job_id,
                                 Micros now) {
  db_.Prepare(sql_.insert_idempotency).BindAll(tenant, key, body_hash, job_id, now).Exec();
}

void SqliteTx::Probe(Micros now) { db_.Prepare(sql_.probe).BindAll(now).Exec(); }

// ---- Intake limiters ----------------------------------------------------------------
// One writer: the row needs no lock of its own.

std::optional<StoredLimit> SqliteTx::LockLimit(const std::string& key) {
  Stmt s = db_.Prepare(sql_.select_limit);
  s.BindAll(key);
  if (!s.Step()) return std::nullopt;
  return StoredLimit{s.Text(0), s.Int(1)};
}

bool SqliteTx::InsertLimit(const std::string& key, const std::string& state, Micros expires_at) {
  return db_.Prepare(sql_.insert_limit).BindAll(key, state, expires_at).Exec() == 1;
}

void SqliteTx::UpdateLimit(const std::string& key, const std::string& state, Micros expires_at) {
  db_.Prepare(sql_.update_limit).BindAll(key, state, expires_at).Exec();
}

int64_t SqliteTx::CleanLimits(Micros now, int64_t limit) {
  return db_.Prepare(sql_.clean_limits).BindAll(now, limit).Exec();
}

std::optional<StoredLayers> SqliteTx::SelectLayers() {
  Stmt s = db_.Prepare(sql_.select_layers);
  if (!s.Step()) return std::nullopt;
  return StoredLayers{s.Int(0), s.Text(1)};
}

int64_t SqliteTx::PutLayers(const std::string& body, Micros now) {
  Stmt s = db_.Prepare(sql_.put_layers);
  s.BindAll(body, now);
  s.Step();
  return s.Int(0);
}

LimitStats SqliteTx::SelectLimitStats(Micros now) {
  Stmt s = db_.Prepare(sql_.limit_stats);
  s.BindAll(now);
  s.Step();
  return LimitStats{s.Int(0), s.Int(1)};
}

// ---- Tokens ------------------------------------------------------------------------

void SqliteTx::InsertToken(const TokenRecord& t) {
  db_.Prepare(sql_.insert_token)
      .BindAll(t.id, t.secret_hash, t.tenant, ScopesToJson(t.scopes), QueuesToJson(t.queues),
               t.created_at)
      .Exec();
}

std::optional<TokenRecord> SqliteTx::SelectToken(const std::string& id) {
  Stmt s = db_.Prepare(sql_.select_token);
  s.BindAll(id);
  if (!s.Step()) return std::nullopt;
  return RowToToken(s);
}

std::vector<TokenRecord> SqliteTx::ListTokens() {
  std::vector<TokenRecord> out;
  Stmt s = db_.Prepare(sql_.list_tokens);
  while (s.Step()) out.push_back(RowToToken(s));
  return out;
}

std::optional<TokenRecord> SqliteTx::RevokeToken(const std::string& id, Micros now) {
  Stmt s = db_.Prepare(sql_.revoke_token);
  s.BindAll(id, now);
  if (!s.Step()) return std::nullopt;
  return RowToToken(s);
}

// ---- Config sources ------------------------------------------------------------------

std::optional<std::string> SqliteTx::ConfigSource(const std::string& key) {
  Stmt s = db_.Prepare(sql_.select_config_source);
  s.BindAll(key);
  if (!s.Step()) return std::nullopt;
  return s.Text(0);
}

void SqliteTx::SetConfigSource(const std::string& key, const std::optional<std::string>& file) {
  if (file) {
    db_.Prepare(sql_.set_config_source).BindAll(key, *file).Exec();
  } else {
    db_.Prepare(sql_.clear_config_source).BindAll(key).Exec();
  }
}

std::vector<std::pair<std::string, std::string>> SqliteTx::ConfigSources() {
  std::vector<std::pair<std::string, std::string>> out;
  Stmt s = db_.Prepare(sql_.list_config_sources);
  while (s.Step()) out.emplace_back(s.Text(0), s.Text(1));
  return out;
}

}  // namespace sluice
