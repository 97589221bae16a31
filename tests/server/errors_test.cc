// The one error map: every code has a status, a stable wire name, and renders as
// application/problem+json with the code in `error`.
#include "server/errors.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <set>

#include "server/auth.h"

namespace sluice {
namespace {

TEST_CASE("every error code renders as problem+json with its wire name") {
  std::set<std::string> names;
  for (ErrorCode code : kAllErrorCodes) {
    HttpResponse res;
    RenderError(res, MakeError(code, "details"));
    auto body = nlohmann::json::parse(res.body);
    CHECK(res.content_type == "application/problem+json");
    CHECK(body["status"] == res.status);
    CHECK(body["error"] == std::string(ErrorCodeName(code)));
    CHECK(body["type"] == "about:blank");
    CHECK(body["detail"] == "details");
    CHECK(res.status >= 400);
    names.insert(std::string(ErrorCodeName(code)));
  }
  CHECK(names.size() == std::size(kAllErrorCodes));  // wire names are distinct
}

TEST_CASE("wire names parse back to their codes") {
  for (ErrorCode code : kAllErrorCodes) CHECK(ParseErrorCode(ErrorCodeName(code)) == code);
  CHECK_FALSE(ParseErrorCode("no_such_code"));
}

TEST_CASE("status codes follow the API contract") {
  CHECK(HttpStatusFor(ErrorCode::kQueueFull) == 429);
  CHECK(HttpStatusFor(ErrorCode::kDeadlineUnreachable) == 429);
  CHECK(HttpStatusFor(ErrorCode::kLeaseLost) == 409);
  CHECK(HttpStatusFor(ErrorCode::kStorageUnavailable) == 503);
  CHECK(HttpStatusFor(ErrorCode::kUnauthorized) == 401);
  CHECK(HttpStatusFor(ErrorCode::kForbidden) == 403);
  CHECK(HttpStatusFor(ErrorCode::kPayloadTooLarge) == 413);
}

TEST_CASE("429 and 503 carry Retry-After; 401 carries WWW-Authenticate") {
  HttpResponse full;
  Error e = MakeError(ErrorCode::kQueueFull, "full");
  e.retry_after_s = 7;
  RenderError(full, e);
  CHECK(full.get_header_value("Retry-After") == "7");
  CHECK(nlohmann::json::parse(full.body)["retry_after"] == 7);

  HttpResponse down;
  RenderError(down, MakeError(ErrorCode::kStorageUnavailable, "disk"));
  CHECK(down.get_header_value("Retry-After") == "1");

  HttpResponse unauth;
  RenderError(unauth, MakeError(ErrorCode::kUnauthorized, "who"));
  CHECK(unauth.get_header_value("WWW-Authenticate").rfind("Bearer", 0) == 0);
}

TEST_CASE("minted tokens: id.secret, hashed, never equal") {
  MintedToken a = MintToken();
  MintedToken b = MintToken();
  CHECK(a.plaintext.rfind(a.id + ".", 0) == 0);
  CHECK(a.plaintext != b.plaintext);
  CHECK(a.secret_hash.size() == 64);
  CHECK(a.secret_hash.find(a.plaintext) == std::string::npos);
}

}  // namespace
}  // namespace sluice
