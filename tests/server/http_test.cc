// The typed field readers every handler uses: a value that does not fit its field (a
// number out of range or not an integer, a name off its grammar, an unknown field) is
// a 400 that names the field.
#include "server/http.h"

#include <catch2/catch.hpp>
#include <limits>
#include <string>

#include "common/utf8.h"
#include "tests/server/refusal.h"

namespace sluice {
namespace {

using nlohmann::json;

using testing::Has;
using testing::Parse;
using testing::Refused;

TEST_CASE("IntField: integers in range pass, everything else names the field and range") {
  auto v = IntField(Parse(R"({"n": 7})"), "n", 1, 10);
  REQUIRE(v.ok());
  CHECK(v.value() == 7);
  CHECK_FALSE(IntField(Parse(R"({})"), "n", 1, 10).value().has_value());
  CHECK_FALSE(IntField(Parse(R"({"n": null})"), "n", 1, 10).value().has_value());
  CHECK(IntField(Parse(R"({"n": -5})"), "n", -10, 10).value() == -5);
  CHECK(
      IntField(Parse(R"({"n": 9223372036854775807})"), "n", 0, std::numeric_limits<int64_t>::max())
          .value() == std::numeric_limits<int64_t>::max());

  for (const char* bad :
       {R"({"n": 11})", R"({"n": -1})", R"({"n": 1.5})", R"({"n": 1.0})", R"({"n": 1e1})",
        R"({"n": "5"})", R"({"n": true})", R"({"n": [5]})",
        // Above INT64_MAX: nlohmann holds these unsigned; get<int64_t> would wrap them.
        R"({"n": 9223372036854775808})", R"({"n": 18446744073709551615})",
        R"({"n": 18446744073709551616})", R"({"n": -9223372036854775809})"}) {
    INFO(bad);
    std::string d = Refused(IntField(Parse(bad), "n", 0, 10));
    CHECK(d == "'n' must be an integer from 0 to 10");
  }
  // A negative range never takes an unsigned number.
  Refused(IntField(Parse(R"({"n": 18446744073709551615})"), "n", -10, -1));
}

TEST_CASE("RefuseUnknownFields names the first unknown field, quoted safely") {
  CHECK(RefuseUnknownFields(Parse(R"({"a":1,"b":2})"), {"a", "b", "c"}).ok());
  CHECK(RefuseUnknownFields(Parse(R"({})"), {}).ok());
  CHECK(Refused(RefuseUnknownFields(Parse(R"({"a":1,"zz":2})"), {"a"})) == "unknown field 'zz'");
  std::string d = Refused(RefuseUnknownFields(Parse(R"({"a\nb":1})"), {"a"}));
  CHECK(d == "unknown field 'a\\x0Ab'");
}

TEST_CASE("NameField checks the grammar of its kind and names the field") {
  auto ok = NameField(Parse(R"({"worker_id":"build-host-42"})"), "worker_id", NameKind::kWorkerId);
  REQUIRE(ok.ok());
  CHECK(ok.value() == "build-host-42");
  CHECK(Has(Refused(NameField(Parse(R"({"w":"a b"})"), "w", NameKind::kWorkerId)),
            "'w': worker id 'a b' is not valid"));
  CHECK(Has(Refused(NameField(Parse(R"({"w":""})"), "w", NameKind::kWorkerId)), "empty"));
  CHECK(Has(Refused(NameField(Parse(R"({"w":3})"), "w", NameKind::kWorkerId)), "'w' must be"));
}

}  // namespace
}  // namespace sluice
