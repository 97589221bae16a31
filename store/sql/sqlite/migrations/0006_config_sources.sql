-- What the config file (--config) manages: one row per queue ('queue:<name>') or for the
-- intake-protection layers ('limits'), naming the file. The API refuses to change what a
-- row names (409 managed_by_config); a start with a file that no longer declares it
-- deletes the row, and the API manages it from then on (server/config.h).
CREATE TABLE IF NOT EXISTS config_sources (
  key     TEXT PRIMARY KEY,
  source  TEXT NOT NULL
) STRICT;
