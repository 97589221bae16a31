// The optional config file (--config): queues, tokens and intake-protection layers
// declared at start. Applying it is idempotent: a queue whose stored policy already
// equals the file's is left alone, so restarts do not bump policy versions; a declared
// token is created once (the file holds only its id and the SHA-256 of the whole token,
// never the secret).
//
// Who owns what, so that the file and the API never fight silently:
//   1. A queue's policy, and the layers, that the file declares are managed by the file
//      (recorded in the store, so every instance knows): the API refuses to change or
//      delete them with 409 managed_by_config, naming the file. A restart therefore
//      never undoes an API change: there was none.
//   2. What the file does not declare is managed through the API, and the file never
//      touches it. Something the file declared before and no longer does is handed to
//      the API at the next start (logged).
//   3. Pausing and resuming a queue are operations, not configuration: allowed on every
//      queue, and a restart keeps them.
//   4. Tokens: the file creates a declared token once. Revoking it through the API is
//      allowed (a leaked token must die at once) and stays in force: a start never
//      brings it back, and each start with the file still declaring it logs a warning.
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
  std::string source;  // the file, as given to --config: the manager of what it declares
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

// What applying the file did: how many things it wrote, and what an operator should
// hear of (a declared token revoked through the API, queues handed to the API).
struct ConfigApplied {
  int written = 0;
  std::vector<std::string> warnings;  // each a sentence for the log
  std::vector<std::string> released;  // keys no longer managed by the file
};

// Creates or updates the declared queues and layers (recording them as managed by the
// file), creates the declared tokens, and hands to the API what the file no longer
// declares. A declared token whose id exists with another hash is an error.
Result<ConfigApplied> ApplyConfig(const Config& config, Store& store, Micros now);

}  // namespace sluice
