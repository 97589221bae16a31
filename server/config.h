// The optional config file (--config): queues and tokens declared at start. Applying
// it is idempotent: a queue whose stored policy already equals the file's is left
// alone, so restarts do not bump policy versions; a declared token is created once
// (the file holds only its id and the SHA-256 of the whole token, never the secret;
// a token revoked through the API stays revoked).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "server/limit_layers.h"
#include "shaper/policy.h"
#include "store/store.h"

namespace sluice {

struct Config {
  std::map<std::string, QueuePolicy> queues;
  std::vector<TokenRecord> tokens;
  // The intake-protection layers ("limits": {"layers": [...]}, as PUT /v1/admin/limits
  // reads them); stored when they differ from the stored ones (a new version then).
  std::optional<std::vector<Layer>> limits;
};

// The file's text, read strictly (common/strict_json.h): {"queues": {name: policy},
// "tokens": [{"id", "sha256", "scopes", "tenant"?, "queues"?}]}. Names follow
// common/names.h, a policy reads as on PUT (server/request_readers.h), a token's
// scopes, tenant and queues as on token creation; unknown fields, at the top and in a
// token, are refused, and so is a token id declared twice. Errors are kBadRequest
// whose detail starts with "config <source>: ". Pure; no I/O.
Result<Config> ParseConfig(std::string_view text, const std::string& source);

// Reads the file at `path` and parses it (ParseConfig).
Result<Config> LoadConfig(const std::string& path);

// Creates or updates the declared queues, creates the declared tokens, stores the
// declared layers if they differ from the stored ones. Returns how many were written. A declared
// token whose id exists with another hash is an error.
Result<int> ApplyConfig(const Config& config, Store& store, Micros now);

}  // namespace sluice
