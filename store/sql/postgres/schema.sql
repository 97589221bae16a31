-- sluice schema (PostgreSQL), version 1: the tables, constraints and partial indexes
-- of the SQLite schema (schema.sql at the top of the tree) in PostgreSQL types. Applied
-- to a new database, which is then recorded at the latest version; older databases are
-- upgraded by the numbered files of store/sql/postgres/migrations/
-- (store/sql/postgres/migrate.sql). Runs inside one transaction.
-- Times are bigint microseconds since the Unix epoch, bound as parameters (or read
-- from the database's clock by the statement `now`, store/sql/postgres/statements.sql).
-- Names and tenants sort bytewise (COLLATE "C"), as on SQLite, whatever the database's
-- locale.

-- Queues and their versioned policies (flat JSON, see DESIGN.md).
CREATE TABLE IF NOT EXISTS queues (
  name        text COLLATE "C" PRIMARY KEY,
  policy      text NOT NULL,                 -- JSON, as shaper/policy.h reads it
  version     bigint NOT NULL CHECK (version >= 1),
  paused      boolean NOT NULL DEFAULT false,
  created_at  bigint NOT NULL,
  updated_at  bigint NOT NULL
);

-- One row per (queue, tenant) bucket: the GCRA schedule plus counters kept in step
-- with the jobs table by the store, in the same transaction as every transition.
CREATE TABLE IF NOT EXISTS buckets (
  queue         text COLLATE "C" NOT NULL REFERENCES queues(name) ON DELETE CASCADE,
  tenant        text COLLATE "C" NOT NULL,
  tat_us        bigint NOT NULL DEFAULT 0,  -- theoretical arrival time, whole µs
  tat_frac      bigint NOT NULL DEFAULT 0,  -- plus frac / rate_milli µs (exact schedule)
  queued_count  bigint NOT NULL DEFAULT 0 CHECK (queued_count >= 0),
  queued_cost   bigint NOT NULL DEFAULT 0 CHECK (queued_cost >= 0),
  leased        bigint NOT NULL DEFAULT 0 CHECK (leased >= 0),
  -- totals since the bucket was created
  admitted_total        bigint NOT NULL DEFAULT 0,
  released_total        bigint NOT NULL DEFAULT 0,
  succeeded_total       bigint NOT NULL DEFAULT 0,
  failed_total          bigint NOT NULL DEFAULT 0,
  expired_total         bigint NOT NULL DEFAULT 0,
  lease_timeouts_total  bigint NOT NULL DEFAULT 0,
  -- The release index (store/engine/release.cc): a lower bound of the next release
  -- time; -2^62 = to be checked again, 2^62 = at the tenant cap until a lease ends.
  ready_at              bigint NOT NULL DEFAULT -4611686018427387904,
  PRIMARY KEY (queue, tenant)
);
-- (For a buckets table made before the column, as migration 0005 adds it.)
ALTER TABLE buckets ADD COLUMN IF NOT EXISTS ready_at bigint NOT NULL
  DEFAULT -4611686018427387904;
-- Buckets with queued jobs by release-index order: a lease reads the first few.
CREATE INDEX IF NOT EXISTS buckets_ready ON buckets (queue, ready_at, tenant)
  WHERE queued_count > 0;

-- Leases that ended (a complete, a fail for good, a lease that ran out), not yet folded
-- into their bucket's counters: an ack adds a row here instead of updating the bucket
-- row, so it never waits for that row nor holds it while its commit is flushed. The
-- maintenance leader folds them in (fold_bucket_deltas, every 250 ms); every reader of
-- the counters adds what is still here.
CREATE TABLE IF NOT EXISTS bucket_deltas (
  id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  queue      text COLLATE "C" NOT NULL,
  tenant     text COLLATE "C" NOT NULL,
  leased     bigint NOT NULL,  -- leases ended: subtracted from the bucket's leased
  succeeded  bigint NOT NULL,
  failed     bigint NOT NULL,
  timed_out  bigint NOT NULL
);
CREATE INDEX IF NOT EXISTS bucket_deltas_bucket ON bucket_deltas (queue, tenant);

-- Jobs. seq is admission order (FIFO within a bucket, rule 8); id is the opaque name.
-- seq comes from an identity sequence: above every seq handed out before, which is all
-- FIFO order and list cursors need (two concurrent transactions may commit their seqs
-- out of order).
CREATE TABLE IF NOT EXISTS jobs (
  seq               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  id                text COLLATE "C" NOT NULL UNIQUE,
  queue             text COLLATE "C" NOT NULL,
  tenant            text COLLATE "C" NOT NULL,
  state             text NOT NULL
                    CHECK (state IN ('queued', 'leased', 'succeeded', 'failed', 'expired',
                                     'canceled')),
  payload           text NOT NULL,             -- JSON
  cost              bigint NOT NULL CHECK (cost >= 1),
  attempt           bigint NOT NULL DEFAULT 0 CHECK (attempt >= 0),
  max_attempts      bigint NOT NULL CHECK (max_attempts >= 1),
  lease_ms          bigint NOT NULL CHECK (lease_ms > 0),
  policy_version    bigint NOT NULL,
  created_at        bigint NOT NULL,
  not_before        bigint,
  available_at      bigint NOT NULL,           -- not_before, or the end of a retry backoff
  deadline_at       bigint,                    -- must start before this; NULL = none
  estimated_start   bigint NOT NULL,           -- at admission
  lease_id          text,
  lease_expires_at  bigint,
  worker_id         text,
  leased_at         bigint,
  result            text,                      -- JSON
  errors            text NOT NULL DEFAULT '[]',  -- JSON array, one entry per failed attempt
  finished_at       bigint,
  traceparent       text,                      -- W3C trace context from submit
  -- A job holds a lease exactly while it is leased.
  CHECK ((state = 'leased') = (lease_id IS NOT NULL AND lease_expires_at IS NOT NULL)),
  CHECK ((state IN ('succeeded', 'failed', 'expired', 'canceled')) = (finished_at IS NOT NULL))
);

-- The head of each bucket: first queued job by admission order.
CREATE INDEX IF NOT EXISTS jobs_queued_head ON jobs (queue, tenant, seq) WHERE state = 'queued';
-- Deadline expiry of queued jobs.
CREATE INDEX IF NOT EXISTS jobs_queued_deadline ON jobs (deadline_at)
  WHERE state = 'queued' AND deadline_at IS NOT NULL;
-- Lease expiry.
CREATE INDEX IF NOT EXISTS jobs_leased_expiry ON jobs (lease_expires_at) WHERE state = 'leased';
-- Queued jobs not yet available (not_before, retry backoff): the next wake-up.
CREATE INDEX IF NOT EXISTS jobs_delayed ON jobs (queue, available_at)
  WHERE state = 'queued' AND available_at > created_at;

-- API tokens. The plaintext is shown once at creation; only its SHA-256 is kept.
CREATE TABLE IF NOT EXISTS tokens (
  id           text COLLATE "C" PRIMARY KEY,  -- public part of the token, safe to log
  secret_hash  text NOT NULL,                 -- hex SHA-256 of the whole token
  tenant       text,                          -- required for the submit scope
  scopes       text NOT NULL,                 -- JSON array of submit | work | admin
  queues       text,                          -- JSON array limiting work, NULL = all
  created_at   bigint NOT NULL,
  revoked_at   bigint
);

-- Idempotency keys of submits, per tenant: a replay with the same body returns the
-- original job; the same key with another body is refused.
CREATE TABLE IF NOT EXISTS idempotency_keys (
  tenant      text COLLATE "C" NOT NULL,
  key         text COLLATE "C" NOT NULL,
  body_hash   text NOT NULL,
  job_id      text NOT NULL,
  created_at  bigint NOT NULL,
  PRIMARY KEY (tenant, key)
);
CREATE INDEX IF NOT EXISTS idempotency_keys_age ON idempotency_keys (created_at);

-- Finished jobs by age, for the cleaner.
CREATE INDEX IF NOT EXISTS jobs_finished ON jobs (finished_at) WHERE finished_at IS NOT NULL;
-- A tenant's jobs in admission order, for listing.
CREATE INDEX IF NOT EXISTS jobs_by_tenant ON jobs (tenant, seq);

-- One row written by /readyz to prove the store can commit.
CREATE TABLE IF NOT EXISTS readiness_probe (
  id  integer PRIMARY KEY CHECK (id = 1),
  at  bigint NOT NULL
);

-- Intake-protection limiter state (shaper/limiters/limiter.h), one row per key
-- (rl:v1:...): the algorithm's state as text (EncodeState), and when the key may be
-- forgotten (its quota is whole again then); the cleaner deletes rows past that.
CREATE TABLE IF NOT EXISTS rate_limits (
  key         text COLLATE "C" PRIMARY KEY,
  state       text NOT NULL,
  expires_at  bigint NOT NULL
);
CREATE INDEX IF NOT EXISTS rate_limits_expiry ON rate_limits (expires_at);

-- The intake-protection layers an operator declared (server/limit_layers.h), one row:
-- the layers as JSON ({"layers": [...]}), and a version bumped by every change, as a
-- queue policy's is. No row: the built-in defaults are in force.
CREATE TABLE IF NOT EXISTS limit_layers (
  id          bigint PRIMARY KEY CHECK (id = 1),
  version     bigint NOT NULL,
  body        text NOT NULL,
  updated_at  bigint NOT NULL
);

-- What the config file (--config) manages: one row per queue ('queue:<name>') or for the
-- intake-protection layers ('limits'), naming the file. The API refuses to change what a
-- row names (409 managed_by_config); a start with a file that no longer declares it
-- deletes the row, and the API manages it from then on (server/config.h).
CREATE TABLE IF NOT EXISTS config_sources (
  key     text PRIMARY KEY,
  source  text NOT NULL
);
