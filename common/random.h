// Opaque identifiers from the OS's CSPRNG (OpenSSL RAND_bytes). Thread-safe.
// Random bytes are drawn in blocks into a per-thread buffer (one RAND_bytes call per
// few hundred bytes, not one per id); a forked child never reuses its parent's buffer.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace sluice {

// `prefix` + 2*bytes lowercase hex characters, e.g. RandomId("job_", 10).
std::string RandomId(std::string_view prefix, size_t bytes);

// `prefix` + 13 hex digits of `micros` + 2*bytes random hex: ids that sort by creation
// time, so an index on them grows at its right edge instead of at random pages.
std::string TimeOrderedId(std::string_view prefix, int64_t micros, size_t bytes);

}  // namespace sluice
