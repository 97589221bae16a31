// Opaque identifiers from the OS's CSPRNG (OpenSSL RAND_bytes). Thread-safe.
#pragma once

#include <string>
#include <string_view>

namespace sluice {

// `prefix` + 2*bytes lowercase hex characters, e.g. RandomId("job_", 10).
std::string RandomId(std::string_view prefix, size_t bytes);

}  // namespace sluice
