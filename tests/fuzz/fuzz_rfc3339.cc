// Fuzzes RFC 3339 parsing and printing (common/time.h). Properties: no crash or
// sanitizer report; a time that parses lies in the years 0000-9999 (offset applied) and
// prints as a string that parses back to within a millisecond of it (printing keeps
// milliseconds); any instant at all (the input's first 8 bytes) prints as a string that
// parses, within a millisecond when it lies in those years (outside them the printer
// clamps).
#include <cstdint>
#include <cstring>
#include <string>

#include "common/time.h"
#include "tests/fuzz/fuzz_check.h"

namespace sluice {
namespace {

// 0000-01-01T00:00:00Z and 9999-12-31T23:59:59.999999Z.
constexpr Micros kFirst = -62167219200LL * kMicrosPerSecond;
constexpr Micros kLast = 253402300800LL * kMicrosPerSecond - 1;

bool WithinAMilli(Micros a, Micros b) { return a - b < kMicrosPerMilli && b - a < kMicrosPerMilli; }

bool InRange(Micros t) { return t >= kFirst && t <= kLast; }

void CheckPrints(Micros t) {
  const std::string printed = FormatRfc3339(t);
  auto back = ParseRfc3339(printed);
  if (!back)
    std::fprintf(stderr, "%lld printed as '%s'\n", static_cast<long long>(t), printed.c_str());
  FUZZ_CHECK(back.has_value());
  if (InRange(t)) {
    if (!WithinAMilli(*back, t)) {
      std::fprintf(stderr, "%lld printed as '%s', read back as %lld\n", static_cast<long long>(t),
                   printed.c_str(), static_cast<long long>(*back));
    }
    FUZZ_CHECK(WithinAMilli(*back, t));
  }
}

}  // namespace
}  // namespace sluice

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sluice;
  if (auto t = ParseRfc3339(fuzz::AsText(data, size))) {
    FUZZ_CHECK(InRange(*t));
    CheckPrints(*t);
  }
  if (size >= sizeof(Micros)) {
    Micros any;
    std::memcpy(&any, data, sizeof any);
    CheckPrints(any);
  }
  return 0;
}
