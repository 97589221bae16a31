// A log destination for the fuzz targets that checks every line instead of writing it:
// in the JSON format each line is one JSON object the strict reader accepts; in the
// text format each line is valid UTF-8 with no control characters (one line, no
// injected ones). A line that fails aborts with the line printed.
// Not thread-safe: the targets log from one thread.
#pragma once

#include "server/log.h"

namespace sluice::fuzz {

// Makes `format` the log format (server/log.h) and the checking sink the destination.
// Cheap when the format is already in use.
void UseCheckedLog(LogFormat format);

// Lines checked so far.
size_t CheckedLogLines();

}  // namespace sluice::fuzz
