// The config file's reader: the demo file reads, and what the API refuses the file
// refuses too (strict JSON, unknown fields, names off the grammar).
#include "server/config.h"

#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>

#include "common/utf8.h"

namespace sluice {
namespace {

using nlohmann::json;

const std::string kHash(64, 'a');

json Token(json fields = json::object()) {
  json t = {{"id", "tok_ci"}, {"sha256", kHash}, {"scopes", {"submit"}}, {"tenant", "acme"}};
  for (auto& [k, v] : fields.items()) t[k] = v;
  return t;
}

std::string Refused(std::string_view text) {
  INFO(QuoteForMessage(text));
  auto r = ParseConfig(text, "test.json");
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == ErrorCode::kBadRequest);
  CHECK(IsValidUtf8(r.error().detail));
  CHECK(r.error().detail.rfind("config test.json: ", 0) == 0);
  return r.error().detail;
}

bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST_CASE("config: the demo file reads") {
  std::ifstream in(std::string(SLUICE_SOURCE_DIR) + "/examples/sluice.json");
  REQUIRE(in);
  std::stringstream text;
  text << in.rdbuf();
  auto c = ParseConfig(text.str(), "examples/sluice.json");
  REQUIRE(c.ok());
  REQUIRE(c.value().queues.count("report-export") == 1);
  CHECK(c.value().queues.at("report-export").tenants.size() == 3);
}

TEST_CASE("config: tokens read as token creation reads them") {
  json file = {{"tokens",
                {Token(), Token({{"id", "tok_work"},
                                 {"scopes", {"work"}},
                                 {"tenant", nullptr},
                                 {"queues", {"report-export"}}})}}};
  auto c = ParseConfig(file.dump(), "test.json");
  REQUIRE(c.ok());
  REQUIRE(c.value().tokens.size() == 2);
  CHECK(c.value().tokens[0].id == "tok_ci");
  CHECK(c.value().tokens[0].secret_hash == kHash);
  CHECK(c.value().tokens[0].tenant == "acme");
  CHECK(c.value().tokens[1].queues == std::vector<std::string>{"report-export"});
  CHECK(ParseConfig("{}", "test.json").ok());
}

TEST_CASE("config: read strictly, as request bodies are") {
  CHECK(Has(Refused(R"({"queues":{},"queues":{}})"), "duplicate key 'queues'"));
  Refused(R"({"queues":{}} x)");
  Refused("{not json");
  Refused("[]");
  Refused(std::string(100, '[') + std::string(100, ']'));
}

TEST_CASE("config: unknown fields are refused, at the top and in a token") {
  CHECK(Has(Refused(R"({"queue":{}})"), "unknown field 'queue'"));
  CHECK(
      Has(Refused(json{{"tokens", {Token({{"secret", "x"}})}}}.dump()), "unknown field 'secret'"));
  CHECK(Has(Refused(R"({"queues":{"q":{"rate":1,"rat":2}}})"), "'rat'"));
}

TEST_CASE("config: names follow the grammar") {
  CHECK(Has(Refused(R"({"queues":{"..":{"rate":1}}})"), "queue name '..'"));
  CHECK(Has(Refused(R"({"queues":{"a b":{"rate":1}}})"), "queue name 'a b'"));
  CHECK(Has(Refused(R"({"queues":{"q":{"rate":1,"tenants":{"a b":{}}}}})"), "tenant name 'a b'"));
  CHECK(Has(Refused(json{{"tokens", {Token({{"id", "tok.ci"}})}}}.dump()), "token id 'tok.ci'"));
  CHECK(Has(Refused(json{{"tokens", {Token({{"tenant", ".."}})}}}.dump()), "tenant name '..'"));
  CHECK(Has(Refused(json{{"tokens", {Token({{"tenant", ""}})}}}.dump()), "'tenant'"));
  CHECK(
      Has(Refused(json{{"tokens", {Token({{"queues", {"ok", "."}}})}}}.dump()), "queue name '.'"));
}

TEST_CASE("config: a token needs an id, a sha256 and scopes, once each") {
  for (const char* missing : {"id", "sha256", "scopes"}) {
    INFO(missing);
    json t = Token();
    t.erase(missing);
    Refused(json{{"tokens", {t}}}.dump());
  }
  Refused(json{{"tokens", {Token({{"sha256", std::string(64, 'A')}})}}}.dump());
  Refused(json{{"tokens", {Token({{"sha256", std::string(63, 'a')}})}}}.dump());
  Refused(json{{"tokens", {Token({{"scopes", {"root"}}})}}}.dump());
  Refused(json{{"tokens", {Token({{"tenant", nullptr}})}}}.dump());  // submit needs a tenant
  CHECK(Has(Refused(json{{"tokens", {Token(), Token()}}}.dump()), "declared twice"));
  Refused(R"({"tokens":{}})");
  Refused(R"({"tokens":[7]})");
  Refused(R"({"queues":[]})");
}

}  // namespace
}  // namespace sluice
