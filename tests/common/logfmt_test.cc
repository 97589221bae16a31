// The one logfmt encoder (common/logfmt.h): every value comes out as one line of valid
// UTF-8, bare when plain and quoted otherwise.
#include "common/logfmt.h"

#include <catch2/catch.hpp>
#include <string>

namespace sluice {
namespace {

TEST_CASE("logfmt: plain values are bare, others quoted with escapes", "[logfmt]") {
  CHECK(LogfmtValue("report-export") == "report-export");
  CHECK(LogfmtValue("job_01") == "job_01");
  CHECK(LogfmtValue("") == "\"\"");
  CHECK(LogfmtValue("two words") == "\"two words\"");
  CHECK(LogfmtValue("a=b") == "\"a=b\"");
  CHECK(LogfmtValue("say \"hi\"") == "\"say \\\"hi\\\"\"");
  CHECK(LogfmtValue("back\\slash") == "\"back\\\\slash\"");
  CHECK(LogfmtValue("line\nbreak") == "\"line\\nbreak\"");
  CHECK(LogfmtValue(std::string("tab\there")) == "\"tab\\x09here\"");
  CHECK(LogfmtValue(std::string("nul\0x", 5)) == "\"nul\\x00x\"");
  CHECK(LogfmtValue("caf\xc3\xa9") == "\"caf\xc3\xa9\"");  // UTF-8 kept, quoted
}

TEST_CASE("logfmt: bytes that are not UTF-8 never reach the line", "[logfmt]") {
  const std::string v = LogfmtValue("bad\xff\xfe");
  CHECK(v.find('\xff') == std::string::npos);
  CHECK(v.find('\xfe') == std::string::npos);
  CHECK(v.front() == '"');
  CHECK(v.back() == '"');
  CHECK(v.find('\n') == std::string::npos);
}

}  // namespace
}  // namespace sluice
