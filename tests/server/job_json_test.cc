// JobJson and LeasedJobJson (server/http.h) write exactly what JobToJson(...).dump()
// and LeasedJobToJson(...).dump() write, for jobs drawn at random (seeded): names with
// quotes, escapes and UTF-8, payloads of every JSON kind, stored text that is not JSON.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <random>
#include <string>

#include "server/http.h"

namespace sluice {
namespace {

using nlohmann::json;

class JobMaker {
 public:
  explicit JobMaker(uint32_t seed) : rng_(seed) {}

  JobRecord Make() {
    JobRecord j;
    j.id = Text();
    j.queue = Text();
    j.tenant = Text();
    j.state = kAllJobStates[Pick(kAllJobStates.size())];
    j.payload = Value(3).dump();
    j.cost = Int();
    j.attempt = Int();
    j.max_attempts = Int();
    j.lease_ms = Int();
    j.policy_version = Int();
    j.created_at = Time();
    j.not_before = MaybeTime();
    j.deadline = MaybeTime();
    j.estimated_start = Time();
    if (Pick(2)) j.lease_id = Text();
    j.lease_expires_at = MaybeTime();
    switch (Pick(3)) {
      case 0:
        break;
      case 1:
        j.result = Value(2).dump();
        break;
      default:
        j.result = "not json: " + Text();  // rendered as a string, as ParseStored does
    }
    json errors = json::array();
    for (size_t i = Pick(3); i > 0; --i) errors.push_back({{"attempt", Int()}, {"error", Text()}});
    j.errors = errors.dump();
    j.finished_at = MaybeTime();
    j.leased_at = MaybeTime();
    if (Pick(2)) j.traceparent = Text();
    return j;
  }

 private:
  size_t Pick(size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng_); }
  int64_t Int() {
    return Pick(4) == 0 ? -static_cast<int64_t>(Pick(1000))
                        : std::uniform_int_distribution<int64_t>(0, INT64_MAX)(rng_);
  }
  Micros Time() { return std::uniform_int_distribution<Micros>(0, 4'000'000'000'000'000)(rng_); }
  std::optional<Micros> MaybeTime() {
    return Pick(2) ? std::optional<Micros>(Time()) : std::nullopt;
  }
  std::string Text() {
    static const char* const kPieces[] = {"acme", "job_01", "-", ".",    " ", "\"", "\\",  "\n",
                                          "\t",   "\x01",   "é", "日本", "/", "{}", "[1]", "null"};
    std::string s;
    for (size_t i = Pick(6); i > 0; --i) s += kPieces[Pick(std::size(kPieces))];
    return s;
  }
  json Value(int depth) {
    switch (depth > 0 ? Pick(7) : Pick(5)) {
      case 0:
        return nullptr;
      case 1:
        return Pick(2) == 1;
      case 2:
        return Int();
      case 3:
        return std::uniform_real_distribution<double>(-1e6, 1e6)(rng_);
      case 4:
        return Text();
      case 5: {
        json a = json::array();
        for (size_t i = Pick(4); i > 0; --i) a.push_back(Value(depth - 1));
        return a;
      }
      default: {
        json o = json::object();
        for (size_t i = Pick(4); i > 0; --i) o[Text()] = Value(depth - 1);
        return o;
      }
    }
  }

  std::mt19937 rng_;
};

TEST_CASE("JobJson and LeasedJobJson print what the JSON objects print", "[http]") {
  JobMaker maker(20261130);
  for (int i = 0; i < 2000; ++i) {
    const JobRecord job = maker.Make();
    CAPTURE(i, job.payload);
    REQUIRE(JobJson(job) == JobToJson(job).dump());
    REQUIRE(LeasedJobJson(job) == LeasedJobToJson(job).dump());
  }
}

TEST_CASE("A failed attempt's time is stored in microseconds and shown in RFC 3339", "[http]") {
  JobRecord job;
  job.id = "job_1";
  job.queue = "q";
  job.tenant = "acme";
  job.errors = R"([{"attempt":1,"error":"boom","at":1796127690636460}])";
  const json j = json::parse(JobJson(job));
  REQUIRE(j["errors"].size() == 1);
  CHECK(j["errors"][0]["at"] == "2026-12-01T12:21:30.636Z");
  CHECK(j["errors"][0]["error"] == "boom");
  CHECK(JobJson(job) == JobToJson(job).dump());
}

TEST_CASE("A fresh job renders with nulls where nothing happened yet", "[http]") {
  JobRecord job;
  job.id = "job_1";
  job.queue = "q";
  job.tenant = "acme";
  job.payload = R"({"n":1})";
  const json j = json::parse(JobJson(job));
  CHECK(j["payload"] == json{{"n", 1}});
  CHECK(j["errors"] == json::array());
  CHECK(j["result"].is_null());
  CHECK(j["finished_at"].is_null());
  CHECK(j["traceparent"].is_null());
  CHECK(j["state"] == "queued");
}

}  // namespace
}  // namespace sluice
