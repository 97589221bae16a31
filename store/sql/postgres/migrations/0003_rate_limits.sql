-- Intake-protection limiter state (shaper/limiters/limiter.h), one row per key
-- (rl:v1:...): the algorithm's state as text (EncodeState), and when the key may be
-- forgotten (its quota is whole again then); the cleaner deletes rows past that.
CREATE TABLE IF NOT EXISTS rate_limits (
  key         text COLLATE "C" PRIMARY KEY,
  state       text NOT NULL,
  expires_at  bigint NOT NULL
);
CREATE INDEX IF NOT EXISTS rate_limits_expiry ON rate_limits (expires_at);
