// Fuzzes the config file reader (server/config.h ParseConfig). Properties: no crash,
// exception or sanitizer report; a refusal is a 400 whose detail is valid UTF-8 and
// starts with "config <source>: "; an accepted config declares only valid names,
// policies that read back from their own JSON form, distinct token ids, and tokens
// with the submit scope only with a tenant, and intake layers (server/limit_layers.h,
// the reader PUT /v1/admin/limits uses too) that are few, distinctly named, valid
// limits, and read back from their own JSON form.
#include <algorithm>
#include <cstdint>
#include <set>
#include <string>

#include "common/names.h"
#include "common/utf8.h"
#include "server/config.h"
#include "server/request_readers.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sluice;
  auto config = ParseConfig(fuzz::AsText(data, size), "fuzz.json");
  if (!config.ok()) {
    FUZZ_CHECK(config.error().code == ErrorCode::kBadRequest);
    FUZZ_CHECK(IsValidUtf8(config.error().detail));
    FUZZ_CHECK(config.error().detail.rfind("config fuzz.json: ", 0) == 0);
    return 0;
  }
  for (const auto& [name, policy] : config.value().queues) {
    FUZZ_CHECK(IsValidName(NameKind::kQueue, name));
    const nlohmann::json printed = PolicyToJson(policy);
    auto again = ReadPolicy(printed);
    FUZZ_CHECK(again.ok());
    FUZZ_CHECK(PolicyToJson(again.value()) == printed);
  }
  std::set<std::string> ids;
  for (const TokenRecord& t : config.value().tokens) {
    FUZZ_CHECK(IsValidName(NameKind::kTokenId, t.id));
    FUZZ_CHECK(ids.insert(t.id).second);
    FUZZ_CHECK(t.secret_hash.size() == 64);
    FUZZ_CHECK(!t.scopes.empty());
    if (std::find(t.scopes.begin(), t.scopes.end(), Scope::kSubmit) != t.scopes.end()) {
      FUZZ_CHECK(t.tenant.has_value());
    }
    if (t.tenant) FUZZ_CHECK(IsValidName(NameKind::kTenant, *t.tenant));
  }
  if (config.value().limits) {
    const std::vector<Layer>& layers = *config.value().limits;
    FUZZ_CHECK(layers.size() <= kMaxLayers);
    std::set<std::string> names;
    for (const Layer& l : layers) {
      FUZZ_CHECK(names.insert(l.name).second);
      FUZZ_CHECK(!ValidateLimit(l.limit));
      FUZZ_CHECK(!l.key.empty());
    }
    const nlohmann::json printed = LayersToJson(layers);
    auto again = ReadLayers(printed);
    FUZZ_CHECK(again.ok());
    FUZZ_CHECK(LayersToJson(again.value()) == printed);
  }
  return 0;
}
