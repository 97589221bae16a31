// How the CLI shows durations and numbers.
#include "cli/format.h"

#include <catch2/catch.hpp>

namespace sluice::cli {
namespace {

TEST_CASE("format: durations pick a unit a person reads at a glance") {
  CHECK(FormatDurationMs(0) == "0ms");
  CHECK(FormatDurationMs(850) == "850ms");
  CHECK(FormatDurationMs(1000) == "1.0s");
  CHECK(FormatDurationMs(12'345) == "12.3s");
  CHECK(FormatDurationMs(59'999) == "59.9s");
  CHECK(FormatDurationMs(60'000) == "1m00s");
  CHECK(FormatDurationMs(245'000) == "4m05s");
  CHECK(FormatDurationMs(2 * 3'600'000 + 3 * 60'000 + 59'000) == "2h03m");
  CHECK(FormatDurationMs(3 * 86'400'000LL + 4 * 3'600'000) == "3d04h");
  CHECK(FormatDurationMs(-1) == "-");
}

TEST_CASE("format: numbers without noise") {
  CHECK(FormatNumber(2) == "2");
  CHECK(FormatNumber(2.0) == "2");
  CHECK(FormatNumber(0.5) == "0.5");
  CHECK(FormatNumber(1.0 / 3) == "0.333");
  CHECK(FormatNumber(1000.25) == "1000.25");
  CHECK(FormatNumber(0) == "0");
  CHECK(FormatNumber(-0.0001) == "0");
}

}  // namespace
}  // namespace sluice::cli
