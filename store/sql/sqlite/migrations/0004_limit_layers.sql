-- The intake-protection layers an operator declared (server/limit_layers.h), one row:
-- the layers as JSON ({"layers": [...]}), and a version bumped by every change, as a
-- queue policy's is. No row: the built-in defaults are in force.
CREATE TABLE IF NOT EXISTS limit_layers (
  id          INTEGER PRIMARY KEY CHECK (id = 1),
  version     INTEGER NOT NULL,
  body        TEXT NOT NULL,
  updated_at  INTEGER NOT NULL
) STRICT;
