-- How the SQLite driver versions its schema (store/sqlite/sqlite_schema.cc). A new
-- database gets schema.sql (the current schema, at the top of the tree) and is recorded
-- at the latest version; an older one runs each numbered file of migrations/ above its
-- version, in order, one transaction each. A database made before versioning (it has
-- a jobs table but no schema_migrations) is version 1, the schema of 2026-12-01.

-- name: create_schema_migrations
CREATE TABLE IF NOT EXISTS schema_migrations (
  version     INTEGER PRIMARY KEY,
  name        TEXT NOT NULL,
  applied_at  INTEGER NOT NULL      -- µs since the epoch
) STRICT;

-- name: current_version
SELECT COALESCE(MAX(version), 0) FROM schema_migrations;

-- name: has_jobs_table
SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'jobs';

-- name: record_migration
INSERT INTO schema_migrations (version, name, applied_at) VALUES (?1, ?2, ?3);
