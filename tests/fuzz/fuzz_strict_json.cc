// Fuzzes the strict JSON reader (common/strict_json.h) and, through it, the policy
// reader (shaper/policy.h). Properties: no crash or sanitizer report; a refusal is a
// 400 whose detail is valid UTF-8; what is accepted is within the depth bound, prints
// and reads back to the same value; an accepted policy survives its own JSON form.
#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "common/strict_json.h"
#include "common/utf8.h"
#include "shaper/policy.h"
#include "tests/fuzz/fuzz_check.h"

namespace sluice {
namespace {

// Nesting of arrays and objects in `j`, as the reader counts it: a scalar is 0, "[]" 1,
// "[{}]" 2. Recurses as deep as the reader allowed, no deeper.
int Depth(const nlohmann::json& j) {
  if (!j.is_structured()) return 0;
  int deepest = 0;
  for (const auto& child : j) deepest = std::max(deepest, Depth(child));
  return 1 + deepest;
}

void CheckPolicy(const nlohmann::json& j) {
  auto policy = PolicyFromJson(j);
  if (!policy.ok()) {
    FUZZ_CHECK(policy.error().code == ErrorCode::kBadRequest);
    FUZZ_CHECK(IsValidUtf8(policy.error().detail));
    return;
  }
  fuzz::CheckPolicyRoundTrip(policy.value(),
                             [](const nlohmann::json& p) { return PolicyFromJson(p); });
}

}  // namespace
}  // namespace sluice

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sluice;
  const std::string_view text = fuzz::AsText(data, size);
  auto parsed = ParseStrictJson(text);
  if (!parsed.ok()) {
    FUZZ_CHECK(parsed.error().code == ErrorCode::kBadRequest);
    FUZZ_CHECK(IsValidUtf8(parsed.error().detail));
    return 0;
  }
  const nlohmann::json& j = parsed.value();
  FUZZ_CHECK(Depth(j) <= kMaxJsonDepth);
  // Accepted text is well-formed, so printing cannot throw, and reads back the same.
  const std::string printed = j.dump();
  FUZZ_CHECK(IsValidUtf8(printed));
  auto reread = ParseStrictJson(printed);
  FUZZ_CHECK(reread.ok());
  FUZZ_CHECK(reread.value() == j);
  // The bound is exact: the value's own depth is enough, one level less is refused.
  const int depth = Depth(j);
  FUZZ_CHECK(ParseStrictJson(text, depth).ok());
  FUZZ_CHECK(depth == 0 || !ParseStrictJson(text, depth - 1).ok());
  CheckPolicy(j);
  return 0;
}
