// Who is calling: bearer tokens to principals. API tokens look like
// "<id>.<secret>"; only the SHA-256 of the whole token is stored, and it is compared
// in constant time. The admin token comes from the environment and is kept hashed too.
// Tokens never reach a log line: only their public id does.
// Thread-safe.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/error.h"
#include "server/http_types.h"
#include "store/store.h"

namespace sluice {

struct Principal {
  std::string token_id;               // public id, safe to log ("admin" for the env token)
  std::optional<std::string> tenant;  // submit tokens are bound to one tenant
  std::vector<Scope> scopes;
  std::optional<std::vector<std::string>> queues;  // work tokens may be limited

  bool Has(Scope s) const;
  bool MayWorkOn(const std::string& queue) const;
};

// A freshly minted token: the plaintext goes to the caller once, the hash to the store.
struct MintedToken {
  std::string id;
  std::string plaintext;
  std::string secret_hash;
};

MintedToken MintToken();

// The bearer token of a request ("" when there is none). Never log it: see TokenDigest.
std::string BearerToken(const HttpRequest& req);

class Authenticator {
 public:
  // `admin_token`: the plaintext from SLUICE_ADMIN_TOKEN; empty disables admin access.
  Authenticator(Store& store, const std::string& admin_token);

  // 401 when the header is missing, malformed, unknown or revoked.
  Result<Principal> Authenticate(const HttpRequest& req) const;
  // Authenticate, then 403 unless the principal has `scope`.
  Result<Principal> Require(const HttpRequest& req, Scope scope) const;
  // For the read-only admin views and /metrics: the admin or the metrics scope.
  Result<Principal> RequireReader(const HttpRequest& req) const;

 private:
  Store& store_;
  std::string admin_hash_;  // empty: no admin token configured
};

}  // namespace sluice
