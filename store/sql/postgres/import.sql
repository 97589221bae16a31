-- What `sluiced copy-db` runs on the PostgreSQL database it fills
-- (store/copy/sqlite_to_postgres.h). The rows of each table arrive in batches, each a
-- JSON array of objects keyed by column, as store/sql/sqlite/export.sql's block of the
-- same name reads them from SQLite; json_to_recordset spells the SQLite side's types
-- and each SELECT turns them into the PostgreSQL schema's (store/sql/postgres/schema.sql):
-- integers are bigint on both sides (times are µs since the epoch on both), queues.paused
-- is 0/1 on SQLite and a boolean here, text is text. Every batch runs in the one
-- transaction of the copy: a failure leaves the target as it was.

-- name: has_schema
-- Whether sluice's tables are there yet (before the schema is prepared: nothing written).
SELECT to_regclass('queues') IS NOT NULL AND to_regclass('buckets') IS NOT NULL AND
       to_regclass('jobs') IS NOT NULL AND to_regclass('tokens') IS NOT NULL AND
       to_regclass('idempotency_keys') IS NOT NULL AND to_regclass('limit_layers') IS NOT NULL;

-- name: lock_tables
-- No sluiced on the target writes while the copy runs (and none has written since the
-- check below), and the copy waits at most a few seconds for one that holds a row.
SET LOCAL lock_timeout = '10s';
LOCK TABLE queues, buckets, jobs, tokens, idempotency_keys, limit_layers IN EXCLUSIVE MODE;

-- name: row_counts
-- The rows of each table the copy fills, in the order of store/copy's table list.
SELECT (SELECT count(*) FROM queues), (SELECT count(*) FROM buckets),
       (SELECT count(*) FROM jobs), (SELECT count(*) FROM tokens),
       (SELECT count(*) FROM idempotency_keys), (SELECT count(*) FROM limit_layers);

-- name: queues
INSERT INTO queues (name, policy, version, paused, created_at, updated_at)
SELECT name, policy, version, paused <> 0, created_at, updated_at
  FROM json_to_recordset($1::json)
       AS r(name text, policy text, version bigint, paused bigint, created_at bigint,
            updated_at bigint);

-- name: buckets
-- ready_at (the release index) is copied as it is: it holds on the copy as it did.
INSERT INTO buckets (queue, tenant, tat_us, tat_frac, queued_count, queued_cost, leased,
                     admitted_total, released_total, succeeded_total, failed_total,
                     expired_total, lease_timeouts_total, ready_at)
SELECT queue, tenant, tat_us, tat_frac, queued_count, queued_cost, leased, admitted_total,
       released_total, succeeded_total, failed_total, expired_total, lease_timeouts_total,
       ready_at
  FROM json_to_recordset($1::json)
       AS r(queue text, tenant text, tat_us bigint, tat_frac bigint, queued_count bigint,
            queued_cost bigint, leased bigint, admitted_total bigint, released_total bigint,
            succeeded_total bigint, failed_total bigint, expired_total bigint,
            lease_timeouts_total bigint, ready_at bigint);

-- name: jobs
-- seq is kept (admission order, list cursors): given, over the identity column.
INSERT INTO jobs (seq, id, queue, tenant, state, payload, cost, attempt, max_attempts,
                  lease_ms, policy_version, created_at, not_before, available_at, deadline_at,
                  estimated_start, lease_id, lease_expires_at, worker_id, leased_at, result,
                  errors, finished_at, traceparent)
OVERRIDING SYSTEM VALUE
SELECT seq, id, queue, tenant, state, payload, cost, attempt, max_attempts, lease_ms,
       policy_version, created_at, not_before, available_at, deadline_at, estimated_start,
       lease_id, lease_expires_at, worker_id, leased_at, result, errors, finished_at,
       traceparent
  FROM json_to_recordset($1::json)
       AS r(seq bigint, id text, queue text, tenant text, state text, payload text,
            cost bigint, attempt bigint, max_attempts bigint, lease_ms bigint,
            policy_version bigint, created_at bigint, not_before bigint, available_at bigint,
            deadline_at bigint, estimated_start bigint, lease_id text, lease_expires_at bigint,
            worker_id text, leased_at bigint, result text, errors text, finished_at bigint,
            traceparent text);

-- name: tokens
INSERT INTO tokens (id, secret_hash, tenant, scopes, queues, created_at, revoked_at)
SELECT id, secret_hash, tenant, scopes, queues, created_at, revoked_at
  FROM json_to_recordset($1::json)
       AS r(id text, secret_hash text, tenant text, scopes text, queues text, created_at bigint,
            revoked_at bigint);

-- name: idempotency_keys
INSERT INTO idempotency_keys (tenant, key, body_hash, job_id, created_at)
SELECT tenant, key, body_hash, job_id, created_at
  FROM json_to_recordset($1::json)
       AS r(tenant text, key text, body_hash text, job_id text, created_at bigint);

-- name: restart_job_seq
-- The next job admitted on PostgreSQL comes after every copied one.
SELECT setval(pg_get_serial_sequence('jobs', 'seq'), COALESCE(MAX(seq), 0) + 1, false) FROM jobs;

-- name: limit_layers
INSERT INTO limit_layers (id, version, body, updated_at)
SELECT id, version, body, updated_at
  FROM json_to_recordset($1::json) AS r(id bigint, version bigint, body text, updated_at bigint);
