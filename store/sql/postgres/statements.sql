-- The PostgreSQL driver's statements (store/postgres/pg_tx.cc), one per block, each named
-- by the "-- name:" line that opens it, prepared once per connection under that name.
-- Every parameter is cast to its type, so that preparing needs no type list. Times are
-- bigint microseconds; "now" is a bound parameter, read by the caller from `now` (the
-- database's clock) or given by it. Job rows are read as the columns of `select_job`, in
-- its order. Several processes may share the database: the locking reads say how they
-- take turns (FOR UPDATE), and what they pass over (SKIP LOCKED).

-- name: now
-- The database's clock when called (not the transaction's start): one clock for every
-- process sharing the database.
SELECT (extract(epoch FROM clock_timestamp()) * 1000000)::bigint;

-- name: select_queue
SELECT name, policy, version, paused FROM queues WHERE name = $1::text;

-- name: lock_queue
-- The queue row, locked until the transaction ends: releases from one queue are decided
-- one transaction at a time, across processes.
SELECT name, policy, version, paused FROM queues WHERE name = $1::text FOR UPDATE;

-- name: lock_queue_buckets
-- Before deleting a queue: an admission holds its bucket's row lock until it commits,
-- so once these are held, queue_busy sees every job the queue will ever get.
SELECT 1 FROM buckets WHERE queue = $1::text FOR UPDATE;

-- name: queue_exists
SELECT 1 FROM queues WHERE name = $1::text;

-- name: queue_stats
-- With the ended leases not yet folded into the buckets (bucket_deltas).
SELECT COALESCE(SUM(b.queued_count), 0)::bigint, COALESCE(SUM(b.queued_cost), 0)::bigint,
       (COALESCE(SUM(b.leased), 0) - d.leased)::bigint,
       COALESCE(SUM(b.admitted_total), 0)::bigint, COALESCE(SUM(b.released_total), 0)::bigint,
       (COALESCE(SUM(b.succeeded_total), 0) + d.succeeded)::bigint,
       (COALESCE(SUM(b.failed_total), 0) + d.failed)::bigint,
       COALESCE(SUM(b.expired_total), 0)::bigint,
       (COALESCE(SUM(b.lease_timeouts_total), 0) + d.timed_out)::bigint
FROM (SELECT COALESCE(SUM(x.leased), 0) AS leased, COALESCE(SUM(x.succeeded), 0) AS succeeded,
             COALESCE(SUM(x.failed), 0) AS failed, COALESCE(SUM(x.timed_out), 0) AS timed_out
      FROM bucket_deltas x WHERE x.queue = $1::text) d
LEFT JOIN buckets b ON b.queue = $1::text
GROUP BY d.leased, d.succeeded, d.failed, d.timed_out;

-- name: list_queues
SELECT q.name, q.policy, q.version, q.paused,
       COALESCE(SUM(b.queued_count), 0)::bigint, COALESCE(SUM(b.queued_cost), 0)::bigint,
       (COALESCE(SUM(b.leased), 0) - (SELECT COALESCE(SUM(d.leased), 0) FROM bucket_deltas d WHERE d.queue = q.name))::bigint,
       COALESCE(SUM(b.admitted_total), 0)::bigint, COALESCE(SUM(b.released_total), 0)::bigint,
       (COALESCE(SUM(b.succeeded_total), 0) + (SELECT COALESCE(SUM(d.succeeded), 0) FROM bucket_deltas d WHERE d.queue = q.name))::bigint,
       (COALESCE(SUM(b.failed_total), 0) + (SELECT COALESCE(SUM(d.failed), 0) FROM bucket_deltas d WHERE d.queue = q.name))::bigint,
       COALESCE(SUM(b.expired_total), 0)::bigint,
       (COALESCE(SUM(b.lease_timeouts_total), 0) + (SELECT COALESCE(SUM(d.timed_out), 0) FROM bucket_deltas d WHERE d.queue = q.name))::bigint
FROM queues q LEFT JOIN buckets b ON b.queue = q.name GROUP BY q.name ORDER BY q.name;

-- name: upsert_queue
INSERT INTO queues (name, policy, version, paused, created_at, updated_at)
VALUES ($1::text, $2::text, 1, false, $3::bigint, $3::bigint)
ON CONFLICT (name) DO UPDATE SET policy = excluded.policy, version = queues.version + 1,
  updated_at = excluded.updated_at;

-- name: set_paused
UPDATE queues SET paused = $2::boolean, updated_at = $3::bigint WHERE name = $1::text;

-- name: queue_busy
SELECT (COALESCE(SUM(queued_count), 0) + COALESCE(SUM(leased), 0)
        - (SELECT COALESCE(SUM(d.leased), 0) FROM bucket_deltas d WHERE d.queue = $1::text))::bigint
FROM buckets WHERE queue = $1::text;

-- name: delete_queue
-- Its buckets go with it (ON DELETE CASCADE), and their unfolded deltas here.
WITH deltas AS (DELETE FROM bucket_deltas WHERE queue = $1::text)
DELETE FROM queues WHERE name = $1::text;

-- name: select_bucket
SELECT tat_us, tat_frac, queued_count, queued_cost,
       leased - (SELECT COALESCE(SUM(d.leased), 0) FROM bucket_deltas d WHERE d.queue = $1::text AND d.tenant = $2::text) FROM buckets
WHERE queue = $1::text AND tenant = $2::text;

-- name: lock_bucket_key
-- Admissions to one bucket take turns across processes, even before its row exists (a
-- row lock needs a row; a refused submit must not make one): a transaction-level
-- advisory lock on the bucket's name, then lock_bucket.
SELECT pg_advisory_xact_lock(hashtextextended($1::text || chr(31) || $2::text, 0));

-- name: lock_bucket
-- After lock_bucket_key: under READ COMMITTED this reads what the bucket's previous
-- admission committed while this one waited.
SELECT tat_us, tat_frac, queued_count, queued_cost, leased FROM buckets
WHERE queue = $1::text AND tenant = $2::text FOR UPDATE;

-- name: lock_bucket_keys
-- LockBuckets: lock_bucket_key for each tenant of $2, one after the other in the array's
-- order (the caller's: byte order), then select_buckets in a statement of its own, so
-- that it reads what the admissions this one waited for committed.
SELECT count(pg_advisory_xact_lock(hashtextextended($1::text || chr(31) || u.t, 0)))
FROM unnest($2::text[]) AS u(t);

-- name: select_buckets
-- No row lock: admissions to a bucket take turns on its key (lock_bucket_keys), and the
-- counter changes that follow (buckets_admitted) lock its row, in tenant order.
SELECT tenant, tat_us, tat_frac, queued_count, queued_cost, leased FROM buckets
WHERE queue = $1::text AND tenant = ANY($2::text[]);

-- name: list_buckets
-- With the ended leases not yet folded into the buckets (bucket_deltas).
SELECT b.tenant, b.queued_count, b.queued_cost, b.leased - COALESCE(d.leased, 0), b.tat_us,
       b.tat_frac,
       (SELECT j.created_at FROM jobs j WHERE j.queue = b.queue AND j.tenant = b.tenant
        AND j.state = 'queued' ORDER BY j.seq LIMIT 1),
       b.admitted_total, b.released_total, b.succeeded_total + COALESCE(d.succeeded, 0),
       b.failed_total + COALESCE(d.failed, 0), b.expired_total,
       b.lease_timeouts_total + COALESCE(d.timed_out, 0)
FROM buckets b
LEFT JOIN (SELECT x.tenant, SUM(x.leased) AS leased, SUM(x.succeeded) AS succeeded,
                  SUM(x.failed) AS failed, SUM(x.timed_out) AS timed_out
           FROM bucket_deltas x WHERE x.queue = $1::text GROUP BY x.tenant) d
  ON d.tenant = b.tenant
WHERE b.queue = $1::text ORDER BY b.tenant;

-- name: ready_buckets
-- A page of the release index (store/engine/release.cc): a queue's buckets with queued
-- jobs in (ready_at, tenant) order after ($3, $4), at most $5, each with its first $6
-- jobs available at $2, FIFO (a row each; one row of NULLs when none is). ready_at is a
-- lower bound of the bucket's next release (-2^62: to be checked again; 2^62: at its
-- tenant cap until a lease ends). Nothing is locked: the caller holds the queue's lock,
-- which every lease takes, and lease_jobs passes over a job that left meanwhile. Leased
-- counts with the ended leases not yet folded in (bucket_deltas).
SELECT b.tenant, b.tat_us, b.tat_frac,
       b.leased - COALESCE((SELECT SUM(x.leased) FROM bucket_deltas x
                            WHERE x.queue = b.queue AND x.tenant = b.tenant), 0),
       b.queued_count, b.admitted_total, b.ready_at, h.seq, h.cost, h.deadline_at
FROM (SELECT * FROM buckets
      WHERE queue = $1::text AND queued_count > 0 AND (ready_at, tenant) > ($3::bigint, $4::text)
      ORDER BY ready_at, tenant LIMIT $5::bigint) b
LEFT JOIN LATERAL (
  SELECT j.seq, j.cost, j.deadline_at FROM jobs j
  WHERE j.queue = b.queue AND j.tenant = b.tenant AND j.state = 'queued'
  AND j.available_at <= $2::bigint
  ORDER BY j.seq LIMIT $6::bigint) h ON true
ORDER BY b.ready_at, b.tenant, h.seq;

-- name: unblocked_buckets
-- The buckets of a queue held at their tenant cap (ready_at 2^62) with a lease ended
-- since (a row in bucket_deltas, not yet folded): rows as ready_buckets, $2 and $3 as
-- its $2 and $6.
SELECT b.tenant, b.tat_us, b.tat_frac,
       b.leased - COALESCE((SELECT SUM(x.leased) FROM bucket_deltas x
                            WHERE x.queue = b.queue AND x.tenant = b.tenant), 0),
       b.queued_count, b.admitted_total, b.ready_at, h.seq, h.cost, h.deadline_at
FROM (SELECT * FROM buckets
      WHERE queue = $1::text AND queued_count > 0 AND ready_at = 4611686018427387904
      AND tenant IN (SELECT d.tenant FROM bucket_deltas d WHERE d.queue = $1::text)) b
LEFT JOIN LATERAL (
  SELECT j.seq, j.cost, j.deadline_at FROM jobs j
  WHERE j.queue = b.queue AND j.tenant = b.tenant AND j.state = 'queued'
  AND j.available_at <= $2::bigint
  ORDER BY j.seq LIMIT $3::bigint) h ON true
ORDER BY b.tenant, h.seq;

-- name: bucket_heads_after
-- A bucket's jobs available at $4 after job $3, FIFO, at most $5 (unlocked, as in
-- bucket_heads).
SELECT seq, cost, deadline_at FROM jobs
WHERE queue = $1::text AND tenant = $2::text AND state = 'queued' AND seq > $3::bigint
AND available_at <= $4::bigint
ORDER BY seq LIMIT $5::bigint;

-- name: backlog_buckets
SELECT tenant, tat_us, tat_frac FROM buckets WHERE queue = $1::text ORDER BY tenant;

-- name: backlog_jobs
SELECT tenant, cost, deadline_at FROM jobs WHERE queue = $1::text AND state = 'queued'
ORDER BY tenant, seq;

-- name: bucket_admitted
-- $4: a lower bound of the bucket's next release with this job in it (ready_at never
-- rises here).
INSERT INTO buckets (queue, tenant, queued_count, queued_cost, admitted_total, ready_at)
VALUES ($1::text, $2::text, 1, $3::bigint, 1, $4::bigint)
ON CONFLICT (queue, tenant) DO UPDATE SET queued_count = buckets.queued_count + 1,
  queued_cost = buckets.queued_cost + excluded.queued_cost,
  admitted_total = buckets.admitted_total + 1,
  ready_at = LEAST(buckets.ready_at, excluded.ready_at);

-- name: buckets_admitted
-- bucket_admitted for each (tenant $2[i], cost $3[i], bound $4[i]), one job each, the rows
-- taken in tenant byte order.
INSERT INTO buckets (queue, tenant, queued_count, queued_cost, admitted_total, ready_at)
SELECT $1::text, u.t, count(*), sum(u.c)::bigint, count(*), min(u.r)
FROM unnest($2::text[], $3::bigint[], $4::bigint[]) AS u(t, c, r)
GROUP BY u.t ORDER BY u.t COLLATE "C"
ON CONFLICT (queue, tenant) DO UPDATE SET
  queued_count = buckets.queued_count + excluded.queued_count,
  queued_cost = buckets.queued_cost + excluded.queued_cost,
  admitted_total = buckets.admitted_total + excluded.admitted_total,
  ready_at = LEAST(buckets.ready_at, excluded.ready_at);

-- name: bucket_released
-- $6 jobs of total cost $5 left the bucket, its TAT now $3/$4; its ready_at $7 if the
-- bucket is as the release pass read it ($8 queued, $9 admitted in all: no admission,
-- requeue or cancel since, which the pass's queue lock does not keep out), else to be
-- checked again.
UPDATE buckets SET tat_us = $3::bigint, tat_frac = $4::bigint,
  queued_count = queued_count - $6::bigint, queued_cost = queued_cost - $5::bigint,
  leased = leased + $6::bigint, released_total = released_total + $6::bigint,
  ready_at = CASE WHEN queued_count = $8::bigint AND admitted_total = $9::bigint
                  THEN $7::bigint ELSE -4611686018427387904 END
WHERE queue = $1::text AND tenant = $2::text;

-- name: buckets_released
-- bucket_released for each (tenant $2[i], TAT $3[i]/$4[i], cost $5[i], count $6[i],
-- ready_at $7[i] as read $8[i]/$9[i]), the rows locked in tenant byte order, as
-- admissions lock them.
WITH u AS (SELECT * FROM unnest($2::text[], $3::bigint[], $4::bigint[], $5::bigint[],
                                $6::bigint[], $7::bigint[], $8::bigint[], $9::bigint[])
                         AS u(tenant, tat_us, tat_frac, cost, n, ready_at, seen_queued,
                              seen_admitted)),
l AS MATERIALIZED (SELECT b.tenant FROM buckets b
                   WHERE b.queue = $1::text AND b.tenant IN (SELECT tenant FROM u)
                   ORDER BY b.tenant COLLATE "C" FOR UPDATE)
UPDATE buckets b SET tat_us = u.tat_us, tat_frac = u.tat_frac,
  queued_count = b.queued_count - u.n, queued_cost = b.queued_cost - u.cost,
  leased = b.leased + u.n, released_total = b.released_total + u.n,
  ready_at = CASE WHEN b.queued_count = u.seen_queued AND b.admitted_total = u.seen_admitted
                  THEN u.ready_at ELSE -4611686018427387904 END
FROM u JOIN l ON l.tenant = u.tenant
WHERE b.queue = $1::text AND b.tenant = u.tenant;

-- name: bucket_lease_ended
-- A lease ended: succeeded ($3 = 1), failed for good ($4 = 1), by running out ($5 = 1).
-- A row of its own, not a change to the bucket's: an ack then never waits for the bucket
-- row (which admissions and releases write) nor holds it while its commit is flushed.
-- fold_bucket_deltas moves these into the buckets; until then readers add them.
INSERT INTO bucket_deltas (queue, tenant, leased, succeeded, failed, timed_out)
VALUES ($1::text, $2::text, 1, $3::bigint, $4::bigint, $5::bigint);

-- name: bucket_leases_succeeded
-- bucket_lease_ended, succeeded, for each (queue $1[i], tenant $2[i]): one row per bucket.
INSERT INTO bucket_deltas (queue, tenant, leased, succeeded, failed, timed_out)
SELECT u.q, u.t, count(*), count(*), 0, 0 FROM unnest($1::text[], $2::text[]) AS u(q, t)
GROUP BY u.q, u.t;

-- name: fold_bucket_deltas
-- The ended leases into their buckets (one held at its tenant cap is to be checked
-- again), rows locked in (queue, tenant) byte order as
-- everywhere else (and nothing else locked), so this never waits in a cycle.
WITH d AS (DELETE FROM bucket_deltas RETURNING queue, tenant, leased, succeeded, failed,
                                                timed_out),
s AS (SELECT queue, tenant, SUM(leased) AS leased, SUM(succeeded) AS succeeded,
             SUM(failed) AS failed, SUM(timed_out) AS timed_out
      FROM d GROUP BY queue, tenant),
l AS (SELECT b.queue, b.tenant FROM buckets b JOIN s ON s.queue = b.queue AND s.tenant = b.tenant
      ORDER BY b.queue, b.tenant FOR UPDATE OF b)
UPDATE buckets b SET leased = b.leased - s.leased::bigint,
  succeeded_total = b.succeeded_total + s.succeeded::bigint,
  failed_total = b.failed_total + s.failed::bigint,
  lease_timeouts_total = b.lease_timeouts_total + s.timed_out::bigint,
  ready_at = CASE WHEN b.ready_at = 4611686018427387904 THEN -4611686018427387904 ELSE b.ready_at END
FROM s JOIN l ON l.queue = s.queue AND l.tenant = s.tenant
WHERE b.queue = s.queue AND b.tenant = s.tenant;

-- name: bucket_requeued
-- The job is queued again (its bucket's head may be it): to be checked again.
UPDATE buckets SET leased = leased - 1, queued_count = queued_count + 1,
  queued_cost = queued_cost + $3::bigint, lease_timeouts_total = lease_timeouts_total + $4::bigint,
  ready_at = -4611686018427387904
WHERE queue = $1::text AND tenant = $2::text;

-- name: bucket_dequeued
-- A queued job left without a lease: canceled ($4 = 0) or expired ($4 = 1).
-- The bucket's head may have changed: to be checked again.
UPDATE buckets SET queued_count = queued_count - 1, queued_cost = queued_cost - $3::bigint,
  expired_total = expired_total + $4::bigint, ready_at = -4611686018427387904
WHERE queue = $1::text AND tenant = $2::text;

-- name: dirty_queue_buckets
-- A queue's policy changed: every bucket's next release is to be checked again. The rows
-- locked in tenant byte order first, as everywhere (the caller holds the queue's lock).
UPDATE buckets b SET ready_at = -4611686018427387904
FROM (SELECT tenant FROM buckets WHERE queue = $1::text ORDER BY tenant COLLATE "C"
      FOR UPDATE) l
WHERE b.queue = $1::text AND b.tenant = l.tenant;

-- name: insert_job
-- The stored row is exactly these values and the schema's defaults.
INSERT INTO jobs (id, queue, tenant, state, payload, cost, attempt, max_attempts, lease_ms,
  policy_version, created_at, not_before, available_at, deadline_at, estimated_start,
  traceparent)
VALUES ($1::text, $2::text, $3::text, 'queued', $4::text, $5::bigint, 0, $6::bigint,
  $7::bigint, $8::bigint, $9::bigint, $10::bigint, $11::bigint, $12::bigint, $13::bigint,
  $14::text);

-- name: insert_jobs
-- insert_job for each row of the arrays, in their order (so seq follows it).
INSERT INTO jobs (id, queue, tenant, state, payload, cost, attempt, max_attempts, lease_ms,
  policy_version, created_at, not_before, available_at, deadline_at, estimated_start,
  traceparent)
SELECT u.id, u.queue, u.tenant, 'queued', u.payload, u.cost, 0, u.max_attempts, u.lease_ms,
  u.policy_version, u.created_at, u.not_before, u.available_at, u.deadline_at,
  u.estimated_start, u.traceparent
FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[], $6::bigint[],
  $7::bigint[], $8::bigint[], $9::bigint[], $10::bigint[], $11::bigint[], $12::bigint[],
  $13::bigint[], $14::text[])
  AS u(id, queue, tenant, payload, cost, max_attempts, lease_ms, policy_version, created_at,
       not_before, available_at, deadline_at, estimated_start, traceparent);

-- name: select_job
SELECT id, queue, tenant, state, payload, cost, attempt, max_attempts, lease_ms, policy_version,
  created_at, not_before, available_at, deadline_at, estimated_start, lease_id,
  lease_expires_at, result, errors, finished_at, leased_at, traceparent
FROM jobs WHERE id = $1::text;

-- name: job_exists
SELECT 1 FROM jobs WHERE id = $1::text;

-- name: cost_ahead
-- Queued cost ahead of a job in its bucket among jobs available now (rule 8).
SELECT COALESCE(SUM(cost), 0)::bigint FROM jobs
WHERE queue = $1::text AND tenant = $2::text AND state = 'queued'
AND seq < (SELECT seq FROM jobs WHERE id = $3::text) AND available_at <= $4::bigint;

-- name: next_available
SELECT MIN(available_at) FROM jobs WHERE queue = $1::text AND state = 'queued'
AND available_at > created_at AND available_at > $2::bigint;

-- name: lease_job
UPDATE jobs SET state = 'leased', attempt = attempt + 1, lease_id = $2::text,
  lease_expires_at = $3::bigint + COALESCE($4::bigint, lease_ms) * 1000,
  worker_id = $5::text, leased_at = $3::bigint
WHERE seq = $1::bigint AND state = 'queued'
RETURNING id, queue, tenant, state, payload, cost, attempt, max_attempts, lease_ms,
  policy_version, created_at, not_before, available_at, deadline_at, estimated_start, lease_id,
  lease_expires_at, result, errors, finished_at, leased_at, traceparent;

-- name: lease_jobs
-- lease_job for each (seq $1[i], lease id $2[i], release time $3[i], lease ms $4[i] or the
-- job's, worker $5[i]); a job no longer queued is passed over. Each leased job's seq,
-- then its columns as select_job's. (`= ANY` beside the join, here and in complete_jobs:
-- the rows are found through the key's index whatever the plan cached for the join.)
UPDATE jobs j SET state = 'leased', attempt = j.attempt + 1, lease_id = u.lease_id,
  lease_expires_at = u.released_at + COALESCE(u.lease_ms, j.lease_ms) * 1000,
  worker_id = u.worker_id, leased_at = u.released_at
FROM unnest($1::bigint[], $2::text[], $3::bigint[], $4::bigint[], $5::text[])
  AS u(seq, lease_id, released_at, lease_ms, worker_id)
WHERE j.seq = ANY($1::bigint[]) AND j.seq = u.seq AND j.state = 'queued'
RETURNING j.seq, j.id, j.queue, j.tenant, j.state, j.payload, j.cost, j.attempt, j.max_attempts,
  j.lease_ms, j.policy_version, j.created_at, j.not_before, j.available_at, j.deadline_at,
  j.estimated_start, j.lease_id, j.lease_expires_at, j.result, j.errors, j.finished_at,
  j.leased_at, j.traceparent;

-- name: complete_job
UPDATE jobs SET state = 'succeeded', result = $3::text, finished_at = $4::bigint,
  lease_id = NULL, lease_expires_at = NULL
WHERE id = $1::text AND state = 'leased' AND lease_id = $2::text
AND lease_expires_at > $4::bigint
RETURNING id, queue, tenant, state, payload, cost, attempt, max_attempts, lease_ms,
  policy_version, created_at, not_before, available_at, deadline_at, estimated_start, lease_id,
  lease_expires_at, result, errors, finished_at, leased_at, traceparent;

-- name: complete_jobs
-- complete_job for each (id $1[i], lease id $2[i], result $3[i]) at $4, and only of a job
-- of the queues $5 if given (a job of another queue is left untouched). An id named twice
-- is completed once, by its first item whose lease is the job's. Each completed item's
-- lease id, then the job's columns as select_job's.
UPDATE jobs j SET state = 'succeeded', result = u.result, finished_at = $4::bigint,
  lease_id = NULL, lease_expires_at = NULL
FROM (SELECT DISTINCT ON (x.id) x.id, x.lease_id, x.result
      FROM unnest($1::text[], $2::text[], $3::text[]) WITH ORDINALITY AS x(id, lease_id, result, n)
      JOIN jobs k ON k.id = x.id AND k.lease_id = x.lease_id
      WHERE k.id = ANY($1::text[])
      ORDER BY x.id, x.n) u
WHERE j.id = ANY($1::text[]) AND j.id = u.id AND j.state = 'leased' AND j.lease_id = u.lease_id
AND j.lease_expires_at > $4::bigint AND ($5::text[] IS NULL OR j.queue = ANY($5::text[]))
RETURNING u.lease_id, j.id, j.queue, j.tenant, j.state, j.payload, j.cost, j.attempt,
  j.max_attempts, j.lease_ms, j.policy_version, j.created_at, j.not_before, j.available_at,
  j.deadline_at, j.estimated_start, j.lease_id, j.lease_expires_at, j.result, j.errors,
  j.finished_at, j.leased_at, j.traceparent;

-- name: select_live_lease
SELECT seq, queue, tenant, cost, attempt, max_attempts, deadline_at FROM jobs
WHERE id = $1::text AND state = 'leased' AND lease_id = $2::text
AND lease_expires_at > $3::bigint;

-- name: end_attempt
-- A failed attempt: back to queued ($2 true, from $3 if given) or to failed, its error
-- appended.
UPDATE jobs SET state = CASE WHEN $2::boolean THEN 'queued' ELSE 'failed' END,
  available_at = COALESCE($3::bigint, available_at),
  finished_at = CASE WHEN $2::boolean THEN NULL ELSE $4::bigint END, lease_id = NULL,
  lease_expires_at = NULL, worker_id = NULL,
  errors = (errors::jsonb || jsonb_build_array(jsonb_build_object(
    'attempt', attempt, 'error', $5::text, 'at', $4::bigint)))::text
WHERE seq = $1::bigint AND state = 'leased'
RETURNING id, queue, tenant, state, payload, cost, attempt, max_attempts, lease_ms,
  policy_version, created_at, not_before, available_at, deadline_at, estimated_start, lease_id,
  lease_expires_at, result, errors, finished_at, leased_at, traceparent;

-- name: leases_due
-- Leases that ran out, each locked with its queue's row. A lease another transaction
-- holds (its worker completing it, another reaper), or of a queue another transaction
-- holds (a lease deciding on it), is passed over, for the next sweep. So a sweep waits
-- for nothing, and holds a bucket's row only under its queue's lock, as a lease does: a
-- sweep at the start of a lease transaction never holds what a lease holding the queue
-- waits for while it waits for that queue itself.
SELECT j.seq, j.queue, j.tenant, j.cost, j.attempt, j.max_attempts, j.deadline_at
FROM jobs j JOIN queues q ON q.name = j.queue
WHERE j.state = 'leased' AND j.lease_expires_at <= $1::bigint
FOR UPDATE OF j, q SKIP LOCKED;

-- name: expire_due
-- Queued jobs past their deadline, passed over as in leases_due when another transaction
-- holds the job or its queue.
UPDATE jobs SET state = 'expired', finished_at = $1::bigint
WHERE seq IN (SELECT j.seq FROM jobs j JOIN queues q ON q.name = j.queue
              WHERE j.state = 'queued' AND j.deadline_at IS NOT NULL
              AND j.deadline_at <= $1::bigint
              FOR UPDATE OF j, q SKIP LOCKED)
AND state = 'queued'
RETURNING queue, tenant, cost;

-- name: heartbeat
UPDATE jobs SET lease_expires_at = $4::bigint + COALESCE($3::bigint, lease_ms) * 1000
WHERE id = $1::text AND state = 'leased' AND lease_id = $2::text
AND lease_expires_at > $4::bigint
RETURNING id, queue, tenant, state, payload, cost, attempt, max_attempts, lease_ms,
  policy_version, created_at, not_before, available_at, deadline_at, estimated_start, lease_id,
  lease_expires_at, result, errors, finished_at, leased_at, traceparent;

-- name: cancel_job
UPDATE jobs SET state = 'canceled', finished_at = $2::bigint
WHERE id = $1::text AND state = 'queued'
RETURNING id, queue, tenant, state, payload, cost, attempt, max_attempts, lease_ms,
  policy_version, created_at, not_before, available_at, deadline_at, estimated_start, lease_id,
  lease_expires_at, result, errors, finished_at, leased_at, traceparent;

-- name: retry_job
UPDATE jobs SET state = 'queued', attempt = 0, available_at = $2::bigint, deadline_at = NULL,
  finished_at = NULL
WHERE id = $1::text AND state IN ('failed', 'expired')
RETURNING id, queue, tenant, state, payload, cost, attempt, max_attempts, lease_ms,
  policy_version, created_at, not_before, available_at, deadline_at, estimated_start, lease_id,
  lease_expires_at, result, errors, finished_at, leased_at, traceparent;

-- name: list_jobs
SELECT id, queue, tenant, state, payload, cost, attempt, max_attempts, lease_ms, policy_version,
  created_at, not_before, available_at, deadline_at, estimated_start, lease_id,
  lease_expires_at, result, errors, finished_at, leased_at, traceparent, seq
FROM jobs WHERE seq > $1::bigint AND ($2::text IS NULL OR tenant = $2::text)
AND ($3::text IS NULL OR queue = $3::text) AND ($4::text IS NULL OR state = $4::text)
ORDER BY seq LIMIT $5::bigint;

-- name: clean_jobs
DELETE FROM jobs WHERE seq IN (SELECT seq FROM jobs
                               WHERE finished_at IS NOT NULL AND finished_at < $1::bigint
                               LIMIT $2::bigint FOR UPDATE SKIP LOCKED);

-- name: clean_idempotency_keys
DELETE FROM idempotency_keys WHERE (tenant, key) IN (
  SELECT tenant, key FROM idempotency_keys WHERE created_at < $1::bigint LIMIT $2::bigint
  FOR UPDATE SKIP LOCKED);

-- name: select_idempotency
SELECT body_hash, job_id FROM idempotency_keys WHERE tenant = $1::text AND key = $2::text;

-- name: insert_idempotency
-- Two first submits with one key racing (to two buckets): the second fails with
-- unique_violation, and the driver runs it again, to find the first.
INSERT INTO idempotency_keys (tenant, key, body_hash, job_id, created_at)
VALUES ($1::text, $2::text, $3::text, $4::text, $5::bigint);

-- name: probe
INSERT INTO readiness_probe (id, at) VALUES (1, $1::bigint)
ON CONFLICT (id) DO UPDATE SET at = excluded.at;

-- name: insert_token
INSERT INTO tokens (id, secret_hash, tenant, scopes, queues, created_at)
VALUES ($1::text, $2::text, $3::text, $4::text, $5::text, $6::bigint);

-- name: select_token
SELECT id, secret_hash, tenant, scopes, queues, created_at, revoked_at FROM tokens
WHERE id = $1::text;

-- name: list_tokens
SELECT id, secret_hash, tenant, scopes, queues, created_at, revoked_at FROM tokens
ORDER BY created_at, id;

-- name: revoke_token
UPDATE tokens SET revoked_at = COALESCE(revoked_at, $2::bigint) WHERE id = $1::text
RETURNING id, secret_hash, tenant, scopes, queues, created_at, revoked_at;

-- name: lock_limit
-- An intake limiter's state, locked: decisions on one key take turns across processes.
SELECT state, expires_at FROM rate_limits WHERE key = $1::text FOR UPDATE;

-- name: insert_limit
-- A new key; nothing if another transaction made it first (the caller locks it then).
INSERT INTO rate_limits (key, state, expires_at) VALUES ($1::text, $2::text, $3::bigint)
ON CONFLICT (key) DO NOTHING;

-- name: update_limit
UPDATE rate_limits SET state = $2::text, expires_at = $3::bigint WHERE key = $1::text;

-- name: clean_limits
DELETE FROM rate_limits WHERE key IN (SELECT key FROM rate_limits
                                      WHERE expires_at <= $1::bigint LIMIT $2::bigint
                                      FOR UPDATE SKIP LOCKED);

-- name: select_layers
SELECT version, body FROM limit_layers WHERE id = 1;

-- name: put_layers
INSERT INTO limit_layers (id, version, body, updated_at) VALUES (1, 1, $1::text, $2::bigint)
ON CONFLICT (id) DO UPDATE SET version = limit_layers.version + 1, body = excluded.body,
                               updated_at = excluded.updated_at
RETURNING version;

-- name: limit_stats
-- Keys in use, and the bytes the sliding logs among them hold (state "1,...").
SELECT count(*), coalesce(sum(CASE WHEN state LIKE '1,%' THEN length(state) ELSE 0 END), 0)
FROM rate_limits WHERE expires_at > $1::bigint;

-- name: select_config_source
SELECT source FROM config_sources WHERE key = $1::text;

-- name: set_config_source
INSERT INTO config_sources (key, source) VALUES ($1::text, $2::text)
ON CONFLICT (key) DO UPDATE SET source = excluded.source;

-- name: clear_config_source
DELETE FROM config_sources WHERE key = $1::text;

-- name: list_config_sources
SELECT key, source FROM config_sources ORDER BY key;
