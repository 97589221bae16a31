#include "common/logfmt.h"

#include <algorithm>
#include <cstdio>

#include "common/utf8.h"

namespace sluice {

void AppendLogfmtValue(std::string& out, std::string_view s) {
  const bool plain = !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return c > 0x20 && c < 0x7f && c != '"' && c != '=' && c != '\\';
  });
  if (plain) {
    out += s;
    return;
  }
  const std::string text = IsValidUtf8(s) ? std::string(s) : SanitizeUtf8(s);
  out += '"';
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (u < 0x20 || u == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02X", u);
      out += buf;
    } else {
      out += c;
    }
  }
  out += '"';
}

std::string LogfmtValue(std::string_view s) {
  std::string out;
  AppendLogfmtValue(out, s);
  return out;
}

}  // namespace sluice
