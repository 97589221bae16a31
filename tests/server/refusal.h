// Helpers for tests of the request readers: parse a JSON literal, and take the detail
// of a refusal, which must be a 400 whose detail is valid UTF-8.
#pragma once

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "common/error.h"
#include "common/utf8.h"

namespace sluice::testing {

inline nlohmann::json Parse(std::string_view text) { return nlohmann::json::parse(text); }

template <typename T>
std::string Refused(const Result<T>& r) {
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == ErrorCode::kBadRequest);
  CHECK(IsValidUtf8(r.error().detail));
  return r.error().detail;
}

inline bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace sluice::testing
