#include "server/auth.h"

#include <algorithm>
#include <cctype>

#include "common/crypto.h"
#include "common/random.h"

namespace sluice {

bool Principal::Has(Scope s) const {
  return std::find(scopes.begin(), scopes.end(), s) != scopes.end();
}

bool Principal::MayWorkOn(const std::string& queue) const {
  if (!Has(Scope::kWork)) return false;
  if (!queues) return true;
  return std::find(queues->begin(), queues->end(), queue) != queues->end();
}

MintedToken MintToken() {
  MintedToken t;
  t.id = RandomId("tok_", 8);
  t.plaintext = t.id + "." + RandomId("", 24);
  t.secret_hash = Sha256Hex(t.plaintext);
  return t;
}

Authenticator::Authenticator(Store& store, const std::string& admin_token) : store_(store) {
  if (!admin_token.empty()) admin_hash_ = Sha256Hex(admin_token);
}

std::string BearerToken(const HttpRequest& req) {
  // RFC 9110 section 11.1: the scheme is case-insensitive; RFC 6750: "Bearer" 1*SP token.
  std::string_view h = req.get_header_value_view("Authorization");
  static constexpr std::string_view kBearer = "bearer";
  if (h.size() <= kBearer.size() + 1) return "";
  for (size_t i = 0; i < kBearer.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(h[i])) != kBearer[i]) return "";
  }
  h.remove_prefix(kBearer.size());
  if (h.front() != ' ') return "";
  while (!h.empty() && h.front() == ' ') h.remove_prefix(1);
  while (!h.empty() && (h.back() == ' ' || h.back() == '\t')) h.remove_suffix(1);
  return std::string(h);
}

Result<Principal> Authenticator::Authenticate(const HttpRequest& req) const {
  const std::string token = BearerToken(req);
  if (token.empty()) {
    return MakeError(ErrorCode::kUnauthorized, "an Authorization: Bearer token is required");
  }
  const std::string hash = Sha256Hex(token);
  const Error bad = MakeError(ErrorCode::kUnauthorized, "the token is not valid");

  if (!admin_hash_.empty() && ConstantTimeEquals(hash, admin_hash_)) {
    return Principal{"admin", std::nullopt, {Scope::kAdmin}, std::nullopt};
  }
  size_t dot = token.find('.');
  if (dot == std::string::npos || dot == 0 || dot > 64) return bad;
  auto found = store_.FindToken(token.substr(0, dot));
  if (!found.ok()) return found.error();
  const std::optional<TokenRecord>& rec = found.value();
  if (!rec || rec->revoked || !ConstantTimeEquals(hash, rec->secret_hash)) return bad;
  return Principal{rec->id, rec->tenant, rec->scopes, rec->queues};
}

Result<Principal> Authenticator::Require(const HttpRequest& req, Scope scope) const {
  auto p = Authenticate(req);
  if (!p.ok()) return p;
  if (!p.value().Has(scope)) {
    return MakeError(ErrorCode::kForbidden,
                     "this token lacks the '" + std::string(ScopeName(scope)) + "' scope");
  }
  return p;
}

Result<Principal> Authenticator::RequireReader(const HttpRequest& req) const {
  auto p = Authenticate(req);
  if (!p.ok()) return p;
  if (!p.value().Has(Scope::kAdmin) && !p.value().Has(Scope::kMetrics)) {
    return MakeError(ErrorCode::kForbidden, "this token lacks the 'admin' or 'metrics' scope");
  }
  return p;
}

}  // namespace sluice
