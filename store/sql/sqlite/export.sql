-- What `sluiced copy-db` reads from a SQLite database (store/copy/sqlite_to_postgres.h):
-- one block per table, every column of the table, named as in schema.sql, in an order
-- that lets rows go into PostgreSQL in the same order (store/sql/postgres/import.sql has
-- the block of the same name). Values come out as they are stored: integers, text and
-- NULLs (the tables are STRICT and no column is a BLOB). Not copied: schema_migrations
-- (the target keeps its own versions) and readiness_probe (a /readyz scratch row).
-- The copy checks each block's columns against the table's (columns_of) and refuses a
-- table with a column a block does not read, so nothing is dropped on the way.
-- buckets.head_seq (SQLite's cursor) is read and left out by PostgreSQL's import, which
-- finds heads by its own index.

-- name: columns_of
SELECT name FROM pragma_table_info(?1) ORDER BY cid;

-- name: queues
SELECT name, policy, version, paused, created_at, updated_at FROM queues ORDER BY name;

-- name: buckets
SELECT queue, tenant, tat_us, tat_frac, queued_count, queued_cost, leased, admitted_total,
       released_total, succeeded_total, failed_total, expired_total, lease_timeouts_total,
       ready_at, head_seq
  FROM buckets ORDER BY queue, tenant;

-- name: jobs
SELECT seq, id, queue, tenant, state, payload, cost, attempt, max_attempts, lease_ms,
       policy_version, created_at, not_before, available_at, deadline_at, estimated_start,
       lease_id, lease_expires_at, worker_id, leased_at, result, errors, finished_at,
       traceparent
  FROM jobs ORDER BY seq;

-- name: tokens
SELECT id, secret_hash, tenant, scopes, queues, created_at, revoked_at FROM tokens ORDER BY id;

-- name: idempotency_keys
SELECT tenant, key, body_hash, job_id, created_at FROM idempotency_keys ORDER BY tenant, key;

-- name: limit_layers
SELECT id, version, body, updated_at FROM limit_layers ORDER BY id;
