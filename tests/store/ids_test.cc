// Job ids: unique, and ordered by creation time so the id index grows at its edge.
#include <catch2/catch.hpp>
#include <set>
#include <thread>

#include "common/random.h"

namespace sluice {
namespace {

TEST_CASE("time-ordered ids sort by their time and never repeat", "[ids]") {
  std::vector<std::string> ids;
  for (int64_t t = 1'700'000'000'000'000; ids.size() < 5000; t += 37) {
    ids.push_back(TimeOrderedId("job_", t, 6));
  }
  CHECK(std::is_sorted(ids.begin(), ids.end()));
  CHECK(std::set<std::string>(ids.begin(), ids.end()).size() == ids.size());
  CHECK(ids.front().size() == 4 + 13 + 12);
  CHECK(ids.front().rfind("job_", 0) == 0);
}

TEST_CASE("ids drawn at the same instant on many threads are distinct", "[ids]") {
  constexpr int kThreads = 8, kEach = 2000;
  std::vector<std::vector<std::string>> drawn(kThreads);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      for (int k = 0; k < kEach; ++k) drawn[i].push_back(TimeOrderedId("job_", 42, 6));
    });
  }
  for (auto& t : threads) t.join();
  std::set<std::string> all;
  for (auto& v : drawn) all.insert(v.begin(), v.end());
  CHECK(all.size() == size_t{kThreads} * kEach);
}

TEST_CASE("random ids are hex of the asked length", "[ids]") {
  std::string id = RandomId("tok_", 24);
  CHECK(id.size() == 4 + 48);
  CHECK(id.find_first_not_of("0123456789abcdef", 4) == std::string::npos);
  CHECK(RandomId("", 24) != RandomId("", 24));
}

}  // namespace
}  // namespace sluice
