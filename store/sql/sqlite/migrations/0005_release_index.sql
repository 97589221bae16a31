-- The release index (store/engine/release.cc): each bucket's lower bound of its next
-- release time, and the buckets with queued jobs in that order, so a lease reads the
-- few buckets due first instead of every bucket. Existing buckets start "to be checked
-- again" (-2^62); the first lease checks each once.
ALTER TABLE buckets ADD COLUMN ready_at INTEGER NOT NULL DEFAULT -4611686018427387904;
CREATE INDEX IF NOT EXISTS buckets_ready ON buckets (queue, ready_at, tenant)
  WHERE queued_count > 0;
