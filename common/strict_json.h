// The one JSON reader for input from outside (request bodies, the config file): strict
// and bounded. Refused, each with a message that is valid UTF-8 and names the problem:
// syntax errors, ill-formed UTF-8 in strings, duplicate keys at any level, anything
// after the top-level value (a NUL byte included), nesting deeper than the limit, and
// numbers that do not fit a double. Parsing is iterative (nlohmann's SAX parser keeps
// its own stack), so no input can exhaust the machine stack.
// Pure; thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>

#include "common/error.h"

namespace sluice {

// Deepest nesting of arrays and objects accepted (the top-level value is depth 1).
inline constexpr int kMaxJsonDepth = 64;

// The value, or kBadRequest with a detail such as "duplicate key 'a'" or "the JSON
// is nested deeper than 64 levels".
Result<nlohmann::json> ParseStrictJson(std::string_view text, int max_depth = kMaxJsonDepth);

}  // namespace sluice
