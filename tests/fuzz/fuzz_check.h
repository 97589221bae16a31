// What the fuzz targets share: FUZZ_CHECK, a property that must hold for every input
// (a failure prints the property and aborts, which libFuzzer and the replay runner
// report as a crash). Header only; thread-safe.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "shaper/policy.h"

#define FUZZ_CHECK(cond)                                                               \
  do {                                                                                 \
    if (!(cond)) {                                                                     \
      std::fprintf(stderr, "%s:%d: property failed: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                    \
    }                                                                                  \
  } while (0)

namespace sluice::fuzz {

inline std::string_view AsText(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// What the admin API prints of an accepted policy reads back, through `read` (a
// json -> Result<QueuePolicy> reader), to the same policy.
template <typename Reader>
void CheckPolicyRoundTrip(const QueuePolicy& policy, Reader read) {
  const nlohmann::json printed = PolicyToJson(policy);
  auto again = read(printed);
  FUZZ_CHECK(again.ok());
  FUZZ_CHECK(PolicyToJson(again.value()) == printed);
}

}  // namespace sluice::fuzz
