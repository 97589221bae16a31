// Byte encodings, the one place for them: lower-case hex (token hashes, ids) by
// Boost.Algorithm's hex_lower, and RFC 3986 percent-encoding of a path segment or
// query value (clients build URLs with it, the router decodes with it).
// Thread-safe (pure).
#pragma once

#include <boost/algorithm/hex.hpp>
#include <cstddef>
#include <iterator>
#include <string>
#include <string_view>

namespace sluice {

// Appends the lower-case hex digits of `size` bytes at `data`.
inline void AppendHexLower(std::string& out, const unsigned char* data, size_t size) {
  out.reserve(out.size() + 2 * size);
  boost::algorithm::hex_lower(data, data + size, std::back_inserter(out));
}

// The lower-case hex digit of the low 4 bits of `nibble`.
inline char HexDigitLower(unsigned nibble) { return "0123456789abcdef"[nibble & 0xf]; }

// The value of one hex digit (either case), or -1.
int HexValue(char c);

// `s` with every byte outside RFC 3986's unreserved set (ALPHA DIGIT - . _ ~) written
// as %XX, upper-case as the RFC recommends: safe as one path segment or query value.
std::string PercentEncode(std::string_view s);

// Decodes %XX escapes (a malformed escape is kept as it is); with `plus_is_space`,
// '+' becomes ' ' (query strings). Never longer than `s`.
std::string PercentDecode(std::string_view s, bool plus_is_space);

}  // namespace sluice
