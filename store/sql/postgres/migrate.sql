-- How the PostgreSQL driver versions its schema (store/postgres/pg_schema.cc). A new
-- database gets store/sql/postgres/schema.sql and is recorded at the latest version; an
-- older one runs each numbered file of migrations/ above its version, in order, one
-- transaction each. Every step runs in its own transaction holding lock_migrations,
-- and reads the version again under it: several sluiced starting at once on one
-- database take turns, and each step runs once.

-- name: lock_migrations
-- A transaction-level advisory lock on the two-key space (which no bucket lock uses):
-- ('sluc' as an int4, 1) = migrations. Released at COMMIT or ROLLBACK.
SELECT pg_advisory_xact_lock(1936487779, 1);

-- name: create_schema_migrations
CREATE TABLE IF NOT EXISTS schema_migrations (
  version     bigint PRIMARY KEY,
  name        text NOT NULL,
  applied_at  bigint NOT NULL       -- µs since the epoch
);

-- name: current_version
SELECT COALESCE(MAX(version), 0) FROM schema_migrations;

-- name: record_migration
INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1::bigint, $2::text, $3::bigint);
