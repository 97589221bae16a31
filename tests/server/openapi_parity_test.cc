// The routes the server really registers, the operations of docs/openapi.yaml (as
// compiled into sluiced, server/openapi.h) and the routes docs/api.md names are the same
// set; each operation's x-route-group is its route's group; the document's error codes
// are common/error.h's, each in a response of the status server/errors.cc gives it; and
// its security roles are scopes.
#include <catch2/catch.hpp>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "common/error.h"
#include "server/auth.h"
#include "server/errors.h"
#include "server/openapi.h"
#include "server/route_groups.h"
#include "server/router.h"
#include "tests/fuzz/route_table.h"

namespace sluice::testing {
namespace {

using nlohmann::json;

// "METHOD pattern" with each path parameter written "{}", as the router writes them.
std::string Key(const std::string& method, const std::string& path) {
  static const std::regex param(R"(\{[^}/]*\})");
  return method + " " + std::regex_replace(path, param, "{}");
}

std::string Upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

std::string Join(const std::set<std::string>& items) {
  std::string out;
  for (const std::string& i : items) out += "\n  " + i;
  return out.empty() ? " (none)" : out;
}

std::set<std::string> Minus(const std::set<std::string>& a, const std::set<std::string>& b) {
  std::set<std::string> out;
  for (const std::string& x : a) {
    if (!b.count(x)) out.insert(x);
  }
  return out;
}

std::set<std::string> RouterRoutes() {
  std::set<std::string> out;
  for (const Router::Route& r : fuzz::RealRoutes().routes()) out.insert(r.method + " " + r.pattern);
  return out;
}

const json& Document() {
  static const json doc = json::parse(OpenApiJson());
  return doc;
}

const std::set<std::string>& Methods() {
  static const std::set<std::string> methods = {"get",   "put",     "post", "delete",
                                                "patch", "options", "head", "trace"};
  return methods;
}

// Every route docs/api.md names in full, as `METHOD /path` in code (a query is dropped).
std::set<std::string> ApiMdRoutes() {
  std::ifstream in(std::string(SLUICE_SOURCE_DIR) + "/docs/api.md");
  REQUIRE(in);
  std::stringstream text;
  text << in.rdbuf();
  const std::string md = text.str();
  static const std::regex route(R"(`(GET|PUT|POST|DELETE|PATCH) (/[^`?\s]*)[^`]*`)");
  std::set<std::string> out;
  for (auto it = std::sregex_iterator(md.begin(), md.end(), route); it != std::sregex_iterator();
       ++it) {
    out.insert(Key((*it)[1], (*it)[2]));
  }
  return out;
}

// Follows a local $ref ("#/components/responses/X") in the document.
const json& Resolve(const json& node) {
  if (!node.contains("$ref")) return node;
  std::string ref = node["$ref"];
  REQUIRE(ref.rfind("#/", 0) == 0);
  return Resolve(Document().at(json::json_pointer(ref.substr(1))));
}

TEST_CASE("openapi: the router, docs/openapi.yaml and docs/api.md name the same routes",
          "[openapi]") {
  const std::set<std::string> router = RouterRoutes();
  std::set<std::string> openapi;
  for (const auto& [path, item] : Document().at("paths").items()) {
    for (const auto& [method, op] : item.items()) {
      if (Methods().count(method)) openapi.insert(Key(Upper(method), path));
    }
  }
  const std::set<std::string> api_md = ApiMdRoutes();

  REQUIRE(router.size() >= 30);
  INFO("routes in the router, not in docs/openapi.yaml:" << Join(Minus(router, openapi)));
  INFO("operations in docs/openapi.yaml, not in the router:" << Join(Minus(openapi, router)));
  INFO("routes in the router, not named in docs/api.md:" << Join(Minus(router, api_md)));
  INFO("routes docs/api.md names that the router lacks:" << Join(Minus(api_md, router)));
  CHECK(router == openapi);
  CHECK(router == api_md);
}

TEST_CASE("openapi: each operation's x-route-group is its route's group", "[openapi]") {
  for (const auto& [path, item] : Document().at("paths").items()) {
    for (const auto& [method, op] : item.items()) {
      if (!Methods().count(method)) continue;
      const std::string key = Key(Upper(method), path);
      CAPTURE(key);
      const std::string pattern = key.substr(key.find(' ') + 1);
      auto group = RouteGroupOf(Upper(method), pattern);
      REQUIRE(group.has_value());
      REQUIRE(op.contains("x-route-group"));
      CHECK(op["x-route-group"] == RouteGroupName(*group));
    }
  }
}

TEST_CASE("openapi: the document's error codes are the server's, each under its status",
          "[openapi]") {
  std::set<std::string> ours;
  for (ErrorCode c : kAllErrorCodes) ours.insert(std::string(ErrorCodeName(c)));
  std::set<std::string> documented;
  for (const json& code : Document().at("/components/schemas/ErrorCode/enum"_json_pointer)) {
    documented.insert(code.get<std::string>());
  }
  INFO("in common/error.h only:" << Join(Minus(ours, documented)));
  INFO("in the document only:" << Join(Minus(documented, ours)));
  CHECK(ours == documented);

  // Every problem response, wherever it is used: the codes it lists answer its status.
  std::set<std::string> listed;
  size_t problems = 0;
  auto check_response = [&](const std::string& where, const std::string& status,
                            const json& response) {
    const json& r = Resolve(response);
    if (!r.contains("content") || !r["content"].contains("application/problem+json")) return;
    CAPTURE(where, status);
    ++problems;
    const json& schema = r["content"]["application/problem+json"]["schema"];
    REQUIRE(schema.contains("allOf"));
    bool found = false;
    for (const json& part : schema["allOf"]) {
      if (!part.contains("properties") || !part["properties"].contains("error")) continue;
      found = true;
      CHECK(part["properties"]["status"]["const"] == std::stoi(status));
      for (const json& code : part["properties"]["error"]["enum"]) {
        CAPTURE(code);
        auto parsed = ParseErrorCode(code.get<std::string>());
        REQUIRE(parsed.has_value());
        CHECK(HttpStatusFor(*parsed) == std::stoi(status));
        listed.insert(code.get<std::string>());
      }
    }
    CHECK(found);
  };
  for (const auto& [path, item] : Document().at("paths").items()) {
    for (const auto& [method, op] : item.items()) {
      if (!Methods().count(method)) continue;
      for (const auto& [status, response] : op["responses"].items()) {
        check_response(method + " " + path, status, response);
      }
    }
  }
  for (const auto& [name, response] : Document().at("x-unmatched-requests").items()) {
    const json& r = Resolve(response);
    const json& schema = r["content"]["application/problem+json"]["schema"]["allOf"][1];
    check_response(name, std::to_string(schema["properties"]["status"]["const"].get<int>()), r);
  }
  CHECK(problems > 100);
  // Every code but `internal` (a bug, never an answer the document promises) is in a
  // response of some operation.
  std::set<std::string> expected = ours;
  expected.erase(std::string(ErrorCodeName(ErrorCode::kInternal)));
  INFO("codes no response lists:" << Join(Minus(expected, listed)));
  CHECK(listed == expected);
}

TEST_CASE("openapi: the document's security roles are the token scopes", "[openapi]") {
  for (const auto& [path, item] : Document().at("paths").items()) {
    for (const auto& [method, op] : item.items()) {
      if (!Methods().count(method)) continue;
      CAPTURE(method, path);
      REQUIRE(op.contains("security"));
      for (const json& requirement : op["security"]) {
        for (const auto& [scheme, roles] : requirement.items()) {
          CHECK(scheme == "bearerAuth");
          for (const json& role : roles) {
            CAPTURE(role);
            CHECK(ParseScope(role.get<std::string>()).has_value());
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace sluice::testing
