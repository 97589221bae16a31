-- A cursor per bucket instead of an index of queued jobs (schema.sql, buckets.head_seq):
-- a lease no longer deletes an entry of jobs_queued_head, a page of which, at a large
-- backlog, is a random page for every job. Each bucket's cursor starts at its first
-- queued job (below it, nothing of the bucket is queued), else above every job.
ALTER TABLE buckets ADD COLUMN head_seq INTEGER NOT NULL DEFAULT 0;
CREATE INDEX IF NOT EXISTS jobs_fresh ON jobs (queue, tenant, seq) WHERE available_at = created_at;
CREATE INDEX IF NOT EXISTS jobs_waiting ON jobs (queue, tenant, seq)
  WHERE state = 'queued' AND (attempt > 0 OR available_at <> created_at);
UPDATE buckets SET head_seq = COALESCE(
  (SELECT MIN(j.seq) FROM jobs j WHERE j.queue = buckets.queue AND j.tenant = buckets.tenant
   AND j.state = 'queued'),
  (SELECT MAX(seq) + 1 FROM jobs), 0);
DROP INDEX IF EXISTS jobs_queued_head;
