// UTF-8 checks for text that crosses the trust boundary (paths, headers, JSON strings,
// log fields): what is valid passes untouched, what is not is refused or replaced.
// Pure; thread-safe.
#pragma once

#include <string>
#include <string_view>

namespace sluice {

// Well-formed UTF-8 (RFC 3629): no overlong forms, no surrogates, nothing above U+10FFFF.
bool IsValidUtf8(std::string_view s);

// `s` with every ill-formed sequence replaced by U+FFFD, so it can be quoted anywhere.
std::string SanitizeUtf8(std::string_view s);

// `s` quoted for a human-readable message: valid UTF-8, control characters and
// quotes escaped, at most `max_bytes` of input (then "…").
std::string QuoteForMessage(std::string_view s, size_t max_bytes = 80);

}  // namespace sluice
