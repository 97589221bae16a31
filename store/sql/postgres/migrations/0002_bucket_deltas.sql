-- Ended leases as rows of their own instead of changes to the bucket row (see
-- ../schema.sql: bucket_deltas).
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

