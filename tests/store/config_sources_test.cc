// Who owns what (server/config.h, Store::PutQueue): what a config file declares is
// managed by it, recorded in the store so every instance refuses the API's changes to
// it with managed_by_config; what the file stops declaring goes back to the API. Part of
// the conformance suite ([store]): the same on SQLite and PostgreSQL.
#include <string>
#include <vector>

#include "tests/store/store_fixture.h"

namespace sluice::testing {
namespace {

const std::string kFile = "/etc/sluice/sluice.json";

TEST_CASE("config sources: a queue the file declares refuses the API's changes, naming the file",
          "[store][config]") {
  StoreFixture f;
  auto put = f.store().PutQueue("exports", MakePolicy(1000), f.now(), kFile);
  REQUIRE(put.ok());
  CHECK(put.value().version == 1);
  CHECK(put.value().managed_by == kFile);

  auto api = f.store().PutQueue("exports", MakePolicy(2000), f.now());
  REQUIRE_FALSE(api.ok());
  CHECK(api.error().code == ErrorCode::kManagedByConfig);
  CHECK(api.error().detail.find(kFile) != std::string::npos);
  Status deleted = f.store().DeleteQueue("exports");
  REQUIRE_FALSE(deleted.ok());
  CHECK(deleted.error().code == ErrorCode::kManagedByConfig);

  // Nothing changed; pausing is an operation, not configuration: allowed.
  auto q = f.store().GetQueue("exports");
  REQUIRE(q.ok());
  CHECK(q.value().version == 1);
  CHECK(PolicyToJson(q.value().policy) == PolicyToJson(MakePolicy(1000)));
  CHECK(q.value().managed_by == kFile);
  CHECK(f.store().SetPaused("exports", true, f.now()).ok());

  // The same file again with the same policy is no change: no new version.
  auto again = f.store().PutQueue("exports", MakePolicy(1000), f.now(), kFile);
  REQUIRE(again.ok());
  CHECK(again.value().version == 1);
  CHECK(again.value().paused);
  // A new policy in the file is a new version.
  auto changed = f.store().PutQueue("exports", MakePolicy(3000), f.now(), kFile);
  REQUIRE(changed.ok());
  CHECK(changed.value().version == 2);

  // Known after a restart too (it is in the store), and in the list.
  f.Open();
  auto listed = f.store().ListQueues();
  REQUIRE(listed.ok());
  REQUIRE(listed.value().size() == 1);
  CHECK(listed.value()[0].managed_by == kFile);
  CHECK(f.store().PutQueue("exports", MakePolicy(2000), f.now()).error().code ==
        ErrorCode::kManagedByConfig);
}

TEST_CASE("config sources: a queue of the API's stays the API's; released ones return to it",
          "[store][config]") {
  StoreFixture f;
  REQUIRE(f.store().PutQueue("adhoc", MakePolicy(1000), f.now()).ok());
  REQUIRE(f.store().PutQueue("exports", MakePolicy(1000), f.now(), kFile).ok());
  REQUIRE(f.store().PutLimitLayers(R"({"layers":[]})", f.now(), kFile).ok());

  auto adhoc = f.store().PutQueue("adhoc", MakePolicy(2000), f.now());
  REQUIRE(adhoc.ok());
  CHECK(adhoc.value().version == 2);
  CHECK_FALSE(adhoc.value().managed_by.has_value());

  // The file now declares the layers only: exports goes back to the API.
  auto released = f.store().ReleaseFromConfig({"limits"});
  REQUIRE(released.ok());
  CHECK(released.value() == std::vector<std::string>{"queue:exports"});
  auto api = f.store().PutQueue("exports", MakePolicy(2000), f.now());
  REQUIRE(api.ok());
  CHECK(api.value().version == 2);
  CHECK_FALSE(api.value().managed_by.has_value());
  CHECK(f.store().PutLimitLayers(R"({"layers":[1]})", f.now()).error().code ==
        ErrorCode::kManagedByConfig);
  // Nothing left to release but what is kept.
  auto none = f.store().ReleaseFromConfig({"limits"});
  REQUIRE(none.ok());
  CHECK(none.value().empty());
}

TEST_CASE("config sources: layers the file declares refuse the API; the same layers are no change",
          "[store][config]") {
  StoreFixture f;
  auto v1 = f.store().PutLimitLayers(R"({"layers":[]})", f.now(), kFile);
  REQUIRE(v1.ok());
  CHECK(v1.value() == 1);
  auto same = f.store().PutLimitLayers(R"({"layers":[]})", f.now(), kFile);
  REQUIRE(same.ok());
  CHECK(same.value() == 1);
  auto api = f.store().PutLimitLayers(R"({"layers":[1]})", f.now());
  REQUIRE_FALSE(api.ok());
  CHECK(api.error().code == ErrorCode::kManagedByConfig);
  CHECK(api.error().detail.find(kFile) != std::string::npos);
  auto stored = f.store().GetLimitLayers();
  REQUIRE(stored.ok());
  REQUIRE(stored.value());
  CHECK(stored.value()->body == R"({"layers":[]})");
  // Released, the API may change them.
  REQUIRE(f.store().ReleaseFromConfig({}).ok());
  auto v2 = f.store().PutLimitLayers(R"({"layers":[1]})", f.now());
  REQUIRE(v2.ok());
  CHECK(v2.value() == 2);
}

}  // namespace
}  // namespace sluice::testing
