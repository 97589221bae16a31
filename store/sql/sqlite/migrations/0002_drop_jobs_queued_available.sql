-- jobs_queued_available indexed every queued job; jobs_delayed, which replaced it,
-- indexes only the delayed ones, so a plain submit writes one index page fewer.
-- Databases made before jobs_delayed still carry the old index.
DROP INDEX IF EXISTS jobs_queued_available;
