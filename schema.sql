-- sluice schema (SQLite): the current schema, applied to a new database, which is then
-- recorded at the latest version; older databases are upgraded by the numbered files of
-- store/sql/sqlite/migrations/ (store/sql/sqlite/migrate.sql). Change both together:
-- tests/store/migrations_test.cc checks that they give the same schema.
-- Times are integer microseconds since the Unix epoch. "now" is always a bound
-- parameter, never CURRENT_TIMESTAMP: time has one source.

-- Queues and their versioned policies (flat JSON, see DESIGN.md).
CREATE TABLE IF NOT EXISTS queues (
  name        TEXT PRIMARY KEY,
  policy      TEXT NOT NULL,                 -- JSON, as shaper/policy.h reads it
  version     INTEGER NOT NULL CHECK (version >= 1),
  paused      INTEGER NOT NULL DEFAULT 0 CHECK (paused IN (0, 1)),
  created_at  INTEGER NOT NULL,
  updated_at  INTEGER NOT NULL
) STRICT;

-- One row per (queue, tenant) bucket: the GCRA schedule plus counters kept in step
-- with the jobs table by the store, in the same transaction as every transition.
CREATE TABLE IF NOT EXISTS buckets (
  queue         TEXT NOT NULL REFERENCES queues(name) ON DELETE CASCADE,
  tenant        TEXT NOT NULL,
  tat_us        INTEGER NOT NULL DEFAULT 0,  -- theoretical arrival time, whole µs
  tat_frac      INTEGER NOT NULL DEFAULT 0,  -- plus frac / rate_milli µs (exact schedule)
  queued_count  INTEGER NOT NULL DEFAULT 0 CHECK (queued_count >= 0),
  queued_cost   INTEGER NOT NULL DEFAULT 0 CHECK (queued_cost >= 0),
  leased        INTEGER NOT NULL DEFAULT 0 CHECK (leased >= 0),
  -- totals since the bucket was created
  admitted_total        INTEGER NOT NULL DEFAULT 0,
  released_total        INTEGER NOT NULL DEFAULT 0,
  succeeded_total       INTEGER NOT NULL DEFAULT 0,
  failed_total          INTEGER NOT NULL DEFAULT 0,
  expired_total         INTEGER NOT NULL DEFAULT 0,
  lease_timeouts_total  INTEGER NOT NULL DEFAULT 0,
  -- The release index (store/engine/release.cc): a lower bound of the next release
  -- time; -2^62 = to be checked again, 2^62 = at the tenant cap until a lease ends.
  ready_at              INTEGER NOT NULL DEFAULT -4611686018427387904,
  -- The bucket's cursor (store/sqlite/sqlite_tx.cc): every queued job of the bucket below
  -- it is in jobs_waiting. A lease moves it past the jobs it took (and on to the next fresh
  -- one it read: then the job at the cursor is the first fresh one); lowering it is safe.
  head_seq              INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (queue, tenant)
) STRICT, WITHOUT ROWID;

-- Buckets with queued jobs by release-index order: a lease reads the first few.
CREATE INDEX IF NOT EXISTS buckets_ready ON buckets (queue, ready_at, tenant)
  WHERE queued_count > 0;

-- Jobs. seq is admission order (FIFO within a bucket, rule 8); id is the opaque name.
-- seq is the rowid without AUTOINCREMENT: a new job's seq is above every job in the
-- table, which is all FIFO order and list cursors need, and a submit does not rewrite
-- a sqlite_sequence page. (Databases made before keep AUTOINCREMENT; both work.)
-- The CHECKs on state are chains of OR, not IN lists: SQLite tests an IN list of more
-- than two constants by building a temporary b-tree for every row it writes (2.4 µs of
-- a 10 µs insert here); a chain of comparisons builds nothing.
CREATE TABLE IF NOT EXISTS jobs (
  seq               INTEGER PRIMARY KEY,
  id                TEXT NOT NULL UNIQUE,
  queue             TEXT NOT NULL,
  tenant            TEXT NOT NULL,
  state             TEXT NOT NULL
                    CHECK (state = 'queued' OR state = 'leased' OR state = 'succeeded' OR
                           state = 'failed' OR state = 'expired' OR state = 'canceled'),
  payload           TEXT NOT NULL,             -- JSON
  cost              INTEGER NOT NULL CHECK (cost >= 1),
  attempt           INTEGER NOT NULL DEFAULT 0 CHECK (attempt >= 0),
  max_attempts      INTEGER NOT NULL CHECK (max_attempts >= 1),
  lease_ms          INTEGER NOT NULL CHECK (lease_ms > 0),
  policy_version    INTEGER NOT NULL,
  created_at        INTEGER NOT NULL,
  not_before        INTEGER,
  available_at      INTEGER NOT NULL,          -- not_before, or the end of a retry backoff
  deadline_at       INTEGER,                   -- must start before this; NULL = none
  estimated_start   INTEGER NOT NULL,          -- at admission
  lease_id          TEXT,
  lease_expires_at  INTEGER,
  worker_id         TEXT,
  leased_at         INTEGER,
  result            TEXT,                      -- JSON
  errors            TEXT NOT NULL DEFAULT '[]',  -- JSON array, one entry per failed attempt
  finished_at       INTEGER,
  traceparent       TEXT,                      -- W3C trace context from submit
  -- A job holds a lease exactly while it is leased.
  CHECK ((state = 'leased') = (lease_id IS NOT NULL AND lease_expires_at IS NOT NULL)),
  CHECK ((state = 'succeeded' OR state = 'failed' OR state = 'expired' OR state = 'canceled')
         = (finished_at IS NOT NULL))
) STRICT;

-- The head of each bucket is the first of two: the first job of jobs_fresh at or after the
-- bucket's cursor (buckets.head_seq) still queued, and the first of jobs_waiting available
-- now. jobs_fresh is written once, at admission (its columns never change for most jobs),
-- so a lease writes no index page of it; jobs_waiting holds the few queued jobs a cursor
-- may have passed: delayed (not_before, a backoff), back after a failed attempt, retried.
-- The two are disjoint and cover every queued job: one is in jobs_waiting exactly when
-- it is not fresh (attempt = 0 and available_at = created_at), whichever way its
-- available_at differs (an admin retry under a clock behind the job's admission too).
CREATE INDEX IF NOT EXISTS jobs_fresh ON jobs (queue, tenant, seq) WHERE available_at = created_at;
CREATE INDEX IF NOT EXISTS jobs_waiting ON jobs (queue, tenant, seq)
  WHERE state = 'queued' AND (attempt > 0 OR available_at <> created_at);
-- Deadline expiry of queued jobs.
CREATE INDEX IF NOT EXISTS jobs_queued_deadline ON jobs (deadline_at) WHERE state = 'queued' AND deadline_at IS NOT NULL;
-- Lease expiry.
CREATE INDEX IF NOT EXISTS jobs_leased_expiry ON jobs (lease_expires_at) WHERE state = 'leased';
-- Queued jobs not yet available (not_before, retry backoff): the next wake-up.
CREATE INDEX IF NOT EXISTS jobs_delayed ON jobs (queue, available_at)
  WHERE state = 'queued' AND available_at > created_at;

-- API tokens. The plaintext is shown once at creation; only its SHA-256 is kept.
CREATE TABLE IF NOT EXISTS tokens (
  id           TEXT PRIMARY KEY,              -- public part of the token, safe to log
  secret_hash  TEXT NOT NULL,                 -- hex SHA-256 of the whole token
  tenant       TEXT,                          -- required for the submit scope
  scopes       TEXT NOT NULL,                 -- JSON array of submit | work | admin
  queues       TEXT,                          -- JSON array limiting work, NULL = all
  created_at   INTEGER NOT NULL,
  revoked_at   INTEGER
) STRICT;

-- Idempotency keys of submits, per tenant: a replay with the same body returns the
-- original job; the same key with another body is refused.
CREATE TABLE IF NOT EXISTS idempotency_keys (
  tenant      TEXT NOT NULL,
  key         TEXT NOT NULL,
  body_hash   TEXT NOT NULL,
  job_id      TEXT NOT NULL,
  created_at  INTEGER NOT NULL,
  PRIMARY KEY (tenant, key)
) STRICT, WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS idempotency_keys_age ON idempotency_keys (created_at);

-- Finished jobs by age, for the cleaner.
CREATE INDEX IF NOT EXISTS jobs_finished ON jobs (finished_at) WHERE finished_at IS NOT NULL;
-- A tenant's jobs in admission order, for listing.
CREATE INDEX IF NOT EXISTS jobs_by_tenant ON jobs (tenant, seq);

-- One row written by /readyz to prove the store can commit.
CREATE TABLE IF NOT EXISTS readiness_probe (
  id  INTEGER PRIMARY KEY CHECK (id = 1),
  at  INTEGER NOT NULL
) STRICT;

-- Intake-protection limiter state (shaper/limiters/limiter.h), one row per key
-- (rl:v1:...): the algorithm's state as text (EncodeState), and when the key may be
-- forgotten (its quota is whole again then); the cleaner deletes rows past that.
CREATE TABLE IF NOT EXISTS rate_limits (
  key         TEXT PRIMARY KEY,
  state       TEXT NOT NULL,
  expires_at  INTEGER NOT NULL
) STRICT;
CREATE INDEX IF NOT EXISTS rate_limits_expiry ON rate_limits (expires_at);

-- The intake-protection layers an operator declared (server/limit_layers.h), one row:
-- the layers as JSON ({"layers": [...]}), and a version bumped by every change, as a
-- queue policy's is. No row: the built-in defaults are in force.
CREATE TABLE IF NOT EXISTS limit_layers (
  id          INTEGER PRIMARY KEY CHECK (id = 1),
  version     INTEGER NOT NULL,
  body        TEXT NOT NULL,
  updated_at  INTEGER NOT NULL
) STRICT;

-- What the config file (--config) manages: one row per queue ('queue:<name>') or for the
-- intake-protection layers ('limits'), naming the file. The API refuses to change what a
-- row names (409 managed_by_config); a start with a file that no longer declares it
-- deletes the row, and the API manages it from then on (server/config.h).
CREATE TABLE IF NOT EXISTS config_sources (
  key     TEXT PRIMARY KEY,
  source  TEXT NOT NULL
) STRICT;
