-- The SQLite driver's statements (store/sqlite/sqlite_tx.cc), one per block, each named
-- by the "-- name:" line that opens it. Times are integer microseconds; "now" is always
-- a bound parameter. Job rows are read as the columns of `select_job`, in its order.

-- name: select_queue
SELECT name, policy, version, paused FROM queues WHERE name = ?1;

-- name: queue_exists
SELECT 1 FROM queues WHERE name = ?1;

-- name: queue_stats
SELECT COALESCE(SUM(queued_count), 0), COALESCE(SUM(queued_cost), 0), COALESCE(SUM(leased), 0),
       COALESCE(SUM(admitted_total), 0), COALESCE(SUM(released_total), 0),
       COALESCE(SUM(succeeded_total), 0), COALESCE(SUM(failed_total), 0),
       COALESCE(SUM(expired_total), 0), COALESCE(SUM(lease_timeouts_total), 0)
FROM buckets WHERE queue = ?1;

-- name: list_queues
SELECT q.name, q.policy, q.version, q.paused,
       COALESCE(SUM(b.queued_count), 0), COALESCE(SUM(b.queued_cost), 0),
       COALESCE(SUM(b.leased), 0), COALESCE(SUM(b.admitted_total), 0),
       COALESCE(SUM(b.released_total), 0), COALESCE(SUM(b.succeeded_total), 0),
       COALESCE(SUM(b.failed_total), 0), COALESCE(SUM(b.expired_total), 0),
       COALESCE(SUM(b.lease_timeouts_total), 0)
FROM queues q LEFT JOIN buckets b ON b.queue = q.name GROUP BY q.name ORDER BY q.name;

-- name: upsert_queue
INSERT INTO queues (name, policy, version, paused, created_at, updated_at)
VALUES (?1, ?2, 1, 0, ?3, ?3)
ON CONFLICT (name) DO UPDATE SET policy = excluded.policy, version = version + 1,
  updated_at = excluded.updated_at;

-- name: set_paused
UPDATE queues SET paused = ?2, updated_at = ?3 WHERE name = ?1;

-- name: queue_busy
SELECT COALESCE(SUM(queued_count), 0) + COALESCE(SUM(leased), 0) FROM buckets WHERE queue = ?1;

-- name: delete_queue
DELETE FROM queues WHERE name = ?1;

-- name: select_bucket
SELECT tat_us, tat_frac, queued_count, queued_cost, leased FROM buckets
WHERE queue = ?1 AND tenant = ?2;

-- name: list_buckets
SELECT b.tenant, b.queued_count, b.queued_cost, b.leased, b.tat_us, b.tat_frac,
       (SELECT j.created_at FROM jobs j WHERE j.seq = MIN(
          COALESCE((SELECT f.seq FROM jobs f INDEXED BY jobs_fresh
            WHERE f.queue = b.queue AND f.tenant = b.tenant AND f.available_at = f.created_at
            AND f.seq >= b.head_seq AND f.state = 'queued' AND f.attempt = 0
            ORDER BY f.seq LIMIT 1), 9223372036854775807),
          COALESCE((SELECT w.seq FROM jobs w INDEXED BY jobs_waiting
                    WHERE w.queue = b.queue AND w.tenant = b.tenant AND w.state = 'queued'
                    AND (w.attempt > 0 OR w.available_at <> w.created_at)
                    ORDER BY w.seq LIMIT 1), 9223372036854775807))),
       b.admitted_total, b.released_total, b.succeeded_total, b.failed_total, b.expired_total,
       b.lease_timeouts_total
FROM buckets b WHERE b.queue = ?1 ORDER BY b.tenant;

-- name: ready_buckets
-- A page of the release index (store/engine/release.cc): a queue's buckets with queued
-- jobs in (ready_at, tenant) order after (?3, ?4), at most ?5, each with its first job
-- available at ?2 (NULLs: none is). ready_at is a lower bound of the bucket's next
-- release (-2^62: to be checked again; 2^62: at its tenant cap until a lease ends).
-- The head is the first of the bucket's fresh jobs from its cursor and of its waiting
-- jobs available at ?2 (schema.sql). The job at the cursor, when it is fresh and queued,
-- is the first fresh one (a lease leaves the cursor on the next fresh job it read,
-- SqliteTx::BucketReleased): read by the table's key, it spares a walk of jobs_fresh,
-- whose page at a million jobs is rarely in the cache. When the next job by seq after the
-- head is a fresh queued one of the bucket, it is the bucket's next job: no job lies
-- between them, and no fresh one below the head (it would be the head, or below the
-- cursor): columns 11-13. The bucket's jobs came in a run, and it is on the head's page.
-- A bucket with one queued job reads neither: it has no next job, and after the bucket
-- emptied and filled again its cursor is on some other bucket's job (a CASE, not a term
-- of the join: SQLite would read the row first).
SELECT b.tenant, b.tat_us, b.tat_frac, b.leased, b.queued_count, b.admitted_total, b.ready_at,
       j.seq, j.cost, j.deadline_at, n.seq, n.cost, n.deadline_at
FROM buckets b INDEXED BY buckets_ready
LEFT JOIN jobs j ON j.seq = MIN(
  COALESCE(CASE WHEN b.queued_count > 1 THEN
             (SELECT h.seq FROM jobs h WHERE h.seq = b.head_seq AND h.queue = b.queue
              AND h.tenant = b.tenant AND h.available_at = h.created_at AND h.state = 'queued'
              AND h.attempt = 0) END,
           (SELECT f.seq FROM jobs f INDEXED BY jobs_fresh
             WHERE f.queue = b.queue AND f.tenant = b.tenant AND f.available_at = f.created_at
             AND f.seq >= b.head_seq AND f.state = 'queued' AND f.attempt = 0
             ORDER BY f.seq LIMIT 1), 9223372036854775807),
  COALESCE((SELECT w.seq FROM jobs w INDEXED BY jobs_waiting
            WHERE w.queue = b.queue AND w.tenant = b.tenant AND w.state = 'queued'
            AND (w.attempt > 0 OR w.available_at <> w.created_at) AND w.available_at <= ?2
            ORDER BY w.seq LIMIT 1), 9223372036854775807))
LEFT JOIN jobs n ON n.seq = CASE WHEN b.queued_count > 1 THEN j.seq + 1 END
  AND n.queue = b.queue AND n.tenant = b.tenant AND n.available_at = n.created_at
  AND n.state = 'queued' AND n.attempt = 0
WHERE b.queue = ?1 AND b.queued_count > 0 AND (b.ready_at, b.tenant) > (?3, ?4)
ORDER BY b.ready_at, b.tenant LIMIT ?5;

-- name: bucket_heads_fresh
-- The bucket's next ?4 fresh jobs after seq ?3, from its cursor. With bucket_heads_waiting,
-- merged by seq, they are its next heads (SqliteTx::BucketHeadsAfter).
SELECT seq, cost, deadline_at FROM jobs INDEXED BY jobs_fresh
WHERE queue = ?1 AND tenant = ?2 AND available_at = created_at AND seq > ?3
AND seq >= (SELECT head_seq FROM buckets WHERE queue = ?1 AND tenant = ?2)
AND state = 'queued' AND attempt = 0 ORDER BY seq LIMIT ?4;

-- name: bucket_heads_waiting
-- The bucket's next ?5 waiting jobs after seq ?3 available at ?4.
SELECT seq, cost, deadline_at FROM jobs INDEXED BY jobs_waiting
WHERE queue = ?1 AND tenant = ?2 AND state = 'queued'
AND (attempt > 0 OR available_at <> created_at) AND seq > ?3 AND available_at <= ?4
ORDER BY seq LIMIT ?5;

-- name: backlog_buckets
SELECT tenant, tat_us, tat_frac FROM buckets WHERE queue = ?1 ORDER BY tenant;

-- name: backlog_jobs
-- Every queued job of the queue by bucket, in admission order: each bucket's fresh jobs
-- from its cursor, and the waiting ones.
SELECT tenant, cost, deadline_at FROM (
  SELECT f.tenant, f.seq, f.cost, f.deadline_at
  FROM buckets b CROSS JOIN jobs f INDEXED BY jobs_fresh
    ON f.queue = b.queue AND f.tenant = b.tenant AND f.available_at = f.created_at
    AND f.seq >= b.head_seq
  WHERE b.queue = ?1 AND f.state = 'queued' AND f.attempt = 0
  UNION ALL
  SELECT w.tenant, w.seq, w.cost, w.deadline_at FROM jobs w INDEXED BY jobs_waiting
  WHERE w.queue = ?1 AND w.state = 'queued' AND (w.attempt > 0 OR w.available_at <> w.created_at))
ORDER BY tenant, seq;

-- name: bucket_admitted
-- ?5 jobs of total cost ?3 admitted; ?4: a lower bound of the bucket's next release with
-- them in it (ready_at never rises here).
INSERT INTO buckets (queue, tenant, queued_count, queued_cost, admitted_total, ready_at)
VALUES (?1, ?2, ?5, ?3, ?5, ?4)
ON CONFLICT (queue, tenant) DO UPDATE SET queued_count = queued_count + ?5,
  queued_cost = queued_cost + ?3, admitted_total = admitted_total + ?5,
  ready_at = MIN(ready_at, ?4);

-- name: bucket_released
-- ?6 jobs of total cost ?5 left the bucket, its TAT now ?3/?4; its ready_at ?7 if the
-- bucket is as the release pass read it (?8 queued, ?9 admitted in all), else to be
-- checked again. Its cursor moves to ?10 (one past the last job leased from it, which
-- took its heads in order), never back.
UPDATE buckets SET tat_us = ?3, tat_frac = ?4, queued_count = queued_count - ?6,
  queued_cost = queued_cost - ?5, leased = leased + ?6, released_total = released_total + ?6,
  ready_at = CASE WHEN queued_count = ?8 AND admitted_total = ?9 THEN ?7 ELSE -4611686018427387904 END,
  head_seq = MAX(head_seq, ?10)
WHERE queue = ?1 AND tenant = ?2;

-- name: bucket_lease_ended
-- A lease ended: succeeded (?3 = 1), failed for good (?4 = 1), by running out (?5 = 1).
-- A bucket held at its tenant cap is to be checked again.
UPDATE buckets SET leased = leased - 1, succeeded_total = succeeded_total + ?3,
  failed_total = failed_total + ?4, lease_timeouts_total = lease_timeouts_total + ?5,
  ready_at = CASE WHEN ready_at = 4611686018427387904 THEN -4611686018427387904 ELSE ready_at END
WHERE queue = ?1 AND tenant = ?2;

-- name: bucket_leases_succeeded
-- ?3 leases of the bucket ended in success (a batch of acks, grouped by bucket).
UPDATE buckets SET leased = leased - ?3, succeeded_total = succeeded_total + ?3,
  ready_at = CASE WHEN ready_at = 4611686018427387904 THEN -4611686018427387904 ELSE ready_at END
WHERE queue = ?1 AND tenant = ?2;

-- name: bucket_requeued
-- The job is queued again (its bucket's head may be it): to be checked again.
UPDATE buckets SET leased = leased - 1, queued_count = queued_count + 1,
  queued_cost = queued_cost + ?3, lease_timeouts_total = lease_timeouts_total + ?4,
  ready_at = -4611686018427387904
WHERE queue = ?1 AND tenant = ?2;

-- name: bucket_dequeued
-- A queued job left without a lease: canceled (?4 = 0) or expired (?4 = 1).
-- The bucket's head may have changed: to be checked again.
UPDATE buckets SET queued_count = queued_count - 1, queued_cost = queued_cost - ?3,
  expired_total = expired_total + ?4, ready_at = -4611686018427387904
WHERE queue = ?1 AND tenant = ?2;

-- name: dirty_queue_buckets
-- A queue's policy changed: every bucket's next release is to be checked again.
UPDATE buckets SET ready_at = -4611686018427387904 WHERE queue = ?1;

-- name: bucket_cursor_back
-- Job ?3 is queued again as a fresh job (an admin retry under a clock that has not moved
-- since its admission): the bucket's cursor goes back to it.
UPDATE buckets SET head_seq = MIN(head_seq, (SELECT seq FROM jobs WHERE id = ?3))
WHERE queue = ?1 AND tenant = ?2;

-- name: insert_job
-- The stored row is exactly these values and the schema's defaults (no RETURNING: it
-- would copy the row through a temporary table).
INSERT INTO jobs (id, queue, tenant, state, payload, cost, attempt, max_attempts, lease_ms,
  policy_version, created_at, not_before, available_at, deadline_at, estimated_start,
  traceparent)
VALUES (?1, ?2, ?3, 'queued', ?4, ?5, 0, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14);

-- name: select_job
SELECT id, queue, tenant, state, payload, cost, attempt, max_attempts, lease_ms, policy_version,
  created_at, not_before, available_at, deadline_at, estimated_start, lease_id,
  lease_expires_at, result, errors, finished_at, leased_at, traceparent
FROM jobs WHERE id = ?1;

-- name: job_exists
SELECT 1 FROM jobs WHERE id = ?1;

-- name: cost_ahead
-- Queued cost ahead of a job in its bucket among jobs available now (rule 8): fresh jobs
-- from the bucket's cursor and waiting ones.
SELECT
  (SELECT COALESCE(SUM(f.cost), 0) FROM jobs f INDEXED BY jobs_fresh
   WHERE f.queue = ?1 AND f.tenant = ?2 AND f.available_at = f.created_at
   AND f.seq >= (SELECT head_seq FROM buckets WHERE queue = ?1 AND tenant = ?2)
   AND f.seq < (SELECT seq FROM jobs WHERE id = ?3)
   AND f.state = 'queued' AND f.attempt = 0 AND f.available_at <= ?4) +
  (SELECT COALESCE(SUM(w.cost), 0) FROM jobs w INDEXED BY jobs_waiting
   WHERE w.queue = ?1 AND w.tenant = ?2 AND w.state = 'queued'
   AND (w.attempt > 0 OR w.available_at <> w.created_at)
   AND w.seq < (SELECT seq FROM jobs WHERE id = ?3) AND w.available_at <= ?4);

-- name: next_available
SELECT MIN(available_at) FROM jobs WHERE queue = ?1 AND state = 'queued'
AND available_at > created_at AND available_at > ?2;

-- name: lease_job
-- Then select_job_by_seq. Not RETURNING: SQLite would open a temporary table for each
-- statement to hold the row (store/sqlite/sqlite_tx.cc); a read of it by key costs less.
UPDATE jobs SET state = 'leased', attempt = attempt + 1, lease_id = ?2,
  lease_expires_at = ?3 + COALESCE(?4, lease_ms) * 1000, worker_id = ?5, leased_at = ?3
WHERE seq = ?1 AND state = 'queued';

-- name: select_job_by_seq
SELECT id, queue, tenant, state, payload, cost, attempt, max_attempts, lease_ms, policy_version,
  created_at, not_before, available_at, deadline_at, estimated_start, lease_id,
  lease_expires_at, result, errors, finished_at, leased_at, traceparent
FROM jobs WHERE seq = ?1;

-- name: complete_job
-- ?5: NULL, or the queues the job must be in, for a token limited to them, each
-- between commas (",a,b,"; queue names hold no comma): a job of another queue is left
-- untouched, with no read of its own. Not json_each, nor RETURNING: SQLite would open
-- a virtual table and a temporary index, or a temporary table, for every job. Then
-- select_job_by_seq, or select_job (see lease_job).
-- ?6, here and in select_live_lease and heartbeat: the seq the lease id names
-- (common/random.h), or NULL (a lease id of another form): the row is then read by the
-- table's key, not looked up in the index of job ids (at a million jobs a page rarely
-- in the cache); the job must still have id ?1 and lease ?2.
UPDATE jobs SET state = 'succeeded', result = ?3, finished_at = ?4, lease_id = NULL,
  lease_expires_at = NULL
WHERE seq = COALESCE(?6, (SELECT seq FROM jobs WHERE id = ?1))
  AND id = ?1 AND state = 'leased' AND lease_id = ?2 AND lease_expires_at > ?4
  AND (?5 IS NULL OR instr(?5, ',' || queue || ',') > 0);

-- name: select_live_lease
-- ?4: as complete_job's ?6.
SELECT seq, queue, tenant, cost, attempt, max_attempts, deadline_at FROM jobs
WHERE seq = COALESCE(?4, (SELECT seq FROM jobs WHERE id = ?1))
  AND id = ?1 AND state = 'leased' AND lease_id = ?2 AND lease_expires_at > ?3;

-- name: end_attempt
-- A failed attempt: back to queued (?2 = 1, from ?3 if given) or to failed, its error
-- appended.
UPDATE jobs SET state = CASE WHEN ?2 = 1 THEN 'queued' ELSE 'failed' END,
  available_at = COALESCE(?3, available_at),
  finished_at = CASE WHEN ?2 = 1 THEN NULL ELSE ?4 END, lease_id = NULL,
  lease_expires_at = NULL, worker_id = NULL,
  errors = json_insert(errors, '$[#]', json_object('attempt', attempt, 'error', ?5, 'at', ?4))
WHERE seq = ?1 AND state = 'leased'
RETURNING id, queue, tenant, state, payload, cost, attempt, max_attempts, lease_ms,
  policy_version, created_at, not_before, available_at, deadline_at, estimated_start, lease_id,
  lease_expires_at, result, errors, finished_at, leased_at, traceparent;

-- name: leases_due
SELECT seq, queue, tenant, cost, attempt, max_attempts, deadline_at FROM jobs
WHERE state = 'leased' AND lease_expires_at <= ?1;

-- name: any_expire_due
-- Whether expire_due would change anything: an index probe, where the UPDATE … RETURNING
-- would open a temporary table even to return nothing (every lease runs this first).
SELECT 1 FROM jobs INDEXED BY jobs_queued_deadline
WHERE state = 'queued' AND deadline_at IS NOT NULL AND deadline_at <= ?1 LIMIT 1;

-- name: expire_due
UPDATE jobs SET state = 'expired', finished_at = ?1
WHERE state = 'queued' AND deadline_at IS NOT NULL AND deadline_at <= ?1
RETURNING queue, tenant, cost;

-- name: heartbeat
-- ?5: as complete_job's ?6.
UPDATE jobs SET lease_expires_at = ?4 + COALESCE(?3, lease_ms) * 1000
WHERE seq = COALESCE(?5, (SELECT seq FROM jobs WHERE id = ?1))
  AND id = ?1 AND state = 'leased' AND lease_id = ?2 AND lease_expires_at > ?4
RETURNING id, queue, tenant, state, payload, cost, attempt, max_attempts, lease_ms,
  policy_version, created_at, not_before, available_at, deadline_at, estimated_start, lease_id,
  lease_expires_at, result, errors, finished_at, leased_at, traceparent;

-- name: cancel_job
UPDATE jobs SET state = 'canceled', finished_at = ?2 WHERE id = ?1 AND state = 'queued'
RETURNING id, queue, tenant, state, payload, cost, attempt, max_attempts, lease_ms,
  policy_version, created_at, not_before, available_at, deadline_at, estimated_start, lease_id,
  lease_expires_at, result, errors, finished_at, leased_at, traceparent;

-- name: retry_job
UPDATE jobs SET state = 'queued', attempt = 0, available_at = ?2, deadline_at = NULL,
  finished_at = NULL
WHERE id = ?1 AND (state = 'failed' OR state = 'expired')
RETURNING id, queue, tenant, state, payload, cost, attempt, max_attempts, lease_ms,
  policy_version, created_at, not_before, available_at, deadline_at, estimated_start, lease_id,
  lease_expires_at, result, errors, finished_at, leased_at, traceparent;

-- name: list_jobs
SELECT id, queue, tenant, state, payload, cost, attempt, max_attempts, lease_ms, policy_version,
  created_at, not_before, available_at, deadline_at, estimated_start, lease_id,
  lease_expires_at, result, errors, finished_at, leased_at, traceparent, seq
FROM jobs WHERE seq > ?1 AND (?2 IS NULL OR tenant = ?2) AND (?3 IS NULL OR queue = ?3)
AND (?4 IS NULL OR state = ?4) ORDER BY seq LIMIT ?5;

-- name: clean_jobs
-- The job with the highest seq stays: a new job's seq (the rowid) must stay above every
-- bucket's cursor, and SQLite picks one above the highest in the table.
DELETE FROM jobs WHERE seq IN (SELECT seq FROM jobs INDEXED BY jobs_finished
                               WHERE finished_at IS NOT NULL AND finished_at < ?1
                               AND seq < (SELECT MAX(seq) FROM jobs) LIMIT ?2);

-- name: clean_idempotency_keys
DELETE FROM idempotency_keys WHERE (tenant, key) IN (
  SELECT tenant, key FROM idempotency_keys WHERE created_at < ?1 LIMIT ?2);

-- name: select_idempotency
SELECT body_hash, job_id FROM idempotency_keys WHERE tenant = ?1 AND key = ?2;

-- name: insert_idempotency
INSERT INTO idempotency_keys (tenant, key, body_hash, job_id, created_at)
VALUES (?1, ?2, ?3, ?4, ?5);

-- name: probe
INSERT INTO readiness_probe (id, at) VALUES (1, ?1) ON CONFLICT (id) DO UPDATE SET at = ?1;

-- name: insert_token
INSERT INTO tokens (id, secret_hash, tenant, scopes, queues, created_at)
VALUES (?1, ?2, ?3, ?4, ?5, ?6);

-- name: select_token
SELECT id, secret_hash, tenant, scopes, queues, created_at, revoked_at FROM tokens WHERE id = ?1;

-- name: list_tokens
SELECT id, secret_hash, tenant, scopes, queues, created_at, revoked_at FROM tokens
ORDER BY created_at, id;

-- name: revoke_token
UPDATE tokens SET revoked_at = COALESCE(revoked_at, ?2) WHERE id = ?1
RETURNING id, secret_hash, tenant, scopes, queues, created_at, revoked_at;

-- name: select_limit
SELECT state, expires_at FROM rate_limits WHERE key = ?1;

-- name: insert_limit
INSERT INTO rate_limits (key, state, expires_at) VALUES (?1, ?2, ?3) ON CONFLICT (key) DO NOTHING;

-- name: update_limit
UPDATE rate_limits SET state = ?2, expires_at = ?3 WHERE key = ?1;

-- name: clean_limits
DELETE FROM rate_limits WHERE key IN (SELECT key FROM rate_limits WHERE expires_at <= ?1 LIMIT ?2);

-- name: select_layers
SELECT version, body FROM limit_layers WHERE id = 1;

-- name: put_layers
INSERT INTO limit_layers (id, version, body, updated_at) VALUES (1, 1, ?1, ?2)
ON CONFLICT (id) DO UPDATE SET version = limit_layers.version + 1, body = excluded.body,
                               updated_at = excluded.updated_at
RETURNING version;

-- name: limit_stats
SELECT count(*), coalesce(sum(CASE WHEN state LIKE '1,%' THEN length(state) ELSE 0 END), 0)
FROM rate_limits WHERE expires_at > ?1;

-- name: select_config_source
SELECT source FROM config_sources WHERE key = ?1;

-- name: set_config_source
INSERT INTO config_sources (key, source) VALUES (?1, ?2)
ON CONFLICT (key) DO UPDATE SET source = excluded.source;

-- name: clear_config_source
DELETE FROM config_sources WHERE key = ?1;

-- name: list_config_sources
SELECT key, source FROM config_sources ORDER BY key;
