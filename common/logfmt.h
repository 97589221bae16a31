// logfmt values, the one encoder for every log line sluice writes (sluiced's log,
// sluice-worker's job lines): bare when plain, else quoted with escapes. Control
// characters and bytes that are not UTF-8 are written as \xNN, so a line is always one
// line of valid UTF-8 text, whatever a client sent. Thread-safe (pure).
#pragma once

#include <string>
#include <string_view>

namespace sluice {

std::string LogfmtValue(std::string_view s);
// The same, appended to `out`.
void AppendLogfmtValue(std::string& out, std::string_view s);

}  // namespace sluice
