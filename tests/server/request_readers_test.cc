// The request readers of the JSON endpoints: what each accepts, its defaults, and that
// what does not fit (unknown fields, numbers out of range, names off the grammar) is a
// 400 that names the field.
#include "server/request_readers.h"

#include <catch2/catch.hpp>
#include <string>

#include "common/utf8.h"
#include "tests/server/refusal.h"

namespace sluice {
namespace {

using nlohmann::json;

using testing::Has;
using testing::Parse;
using testing::Refused;

TEST_CASE("lease request: the fields, their defaults and their bounds") {
  auto r = ReadLeaseRequest(
      Parse(R"({"queues":["report-export","q"],"max_jobs":5,"wait_ms":1000,"lease_ms":60000,
                "worker_id":"w-1"})"),
      30000);
  REQUIRE(r.ok());
  CHECK(r.value().lease.queues == std::vector<std::string>{"report-export", "q"});
  CHECK(r.value().lease.max_jobs == 5);
  CHECK(r.value().wait == std::chrono::milliseconds(1000));
  CHECK(r.value().lease.lease_ms == 60000);
  CHECK(r.value().lease.worker_id == "w-1");

  auto d = ReadLeaseRequest(Parse(R"({"queues":["q"]})"), 30000);
  REQUIRE(d.ok());
  CHECK(d.value().lease.max_jobs == 1);
  CHECK(d.value().wait == std::chrono::milliseconds(0));
  CHECK_FALSE(d.value().lease.lease_ms);
  CHECK(d.value().lease.worker_id.empty());

  CHECK(Refused(ReadLeaseRequest(Parse(R"({"queues":["q"],"wait_ms":30001})"), 30000)) ==
        "'wait_ms' must be an integer from 0 to 30000");
  CHECK(Has(Refused(ReadLeaseRequest(Parse(R"({"queues":["q"],"max_jobs":101})"), 30000)),
            "'max_jobs'"));
  CHECK(Has(Refused(ReadLeaseRequest(Parse(R"({"queues":["q"],"lease_ms":99})"), 30000)),
            "'lease_ms'"));
  CHECK(Has(Refused(ReadLeaseRequest(Parse(R"({"queues":["q"],"max_jobs":1.0})"), 30000)),
            "'max_jobs' must be an integer"));
  CHECK(Refused(ReadLeaseRequest(Parse(R"({"queues":["q"],"queue":"q"})"), 30000)) ==
        "unknown field 'queue'");
  CHECK(Has(Refused(ReadLeaseRequest(Parse(R"({"queues":["q"],"worker_id":"w\u0001"})"), 30000)),
            "'worker_id': worker id"));
  Refused(ReadLeaseRequest(Parse(R"([])"), 30000));
}

TEST_CASE("lease request: queues are 1 to 100 names of the queue grammar") {
  for (const char* bad : {R"({})", R"({"queues":[]})", R"({"queues":"q"})", R"({"queues":[1]})"}) {
    INFO(bad);
    Refused(ReadLeaseRequest(Parse(bad), 30000));
  }
  CHECK(Has(Refused(ReadLeaseRequest(Parse(R"({"queues":["q",".."]})"), 30000)),
            "'queues'[1]: queue name '..' is not valid"));
  CHECK(Has(Refused(ReadLeaseRequest(Parse(R"({"queues":["a/b"]})"), 30000)), "'/'"));
  json many = {{"queues", json::array()}};
  for (int i = 0; i < 100; ++i) many["queues"].push_back("q" + std::to_string(i));
  CHECK(ReadLeaseRequest(many, 30000).ok());
  many["queues"].push_back("one-more");
  CHECK(Has(Refused(ReadLeaseRequest(many, 30000)), "at most 100"));
}

TEST_CASE("heartbeat, complete and fail: lease_id required, their fields only") {
  auto hb = ReadHeartbeat(Parse(R"({"lease_id":"lse_1","extend_ms":5000})"));
  REQUIRE(hb.ok());
  CHECK(hb.value().lease_id == "lse_1");
  CHECK(hb.value().extend_ms == 5000);
  CHECK_FALSE(ReadHeartbeat(Parse(R"({"lease_id":"lse_1"})")).value().extend_ms);
  CHECK(Has(Refused(ReadHeartbeat(Parse(R"({"lease_id":"l","extend_ms":86400001})"))),
            "'extend_ms' must be an integer from 100 to 86400000"));
  CHECK(Refused(ReadHeartbeat(Parse(R"({"lease_id":"l","extend":1})"))) ==
        "unknown field 'extend'");

  auto done = ReadComplete(Parse(R"({"lease_id":"lse_1","result":{"rows":3}})"));
  REQUIRE(done.ok());
  CHECK(done.value().result == R"({"rows":3})");
  CHECK_FALSE(ReadComplete(Parse(R"({"lease_id":"lse_1"})")).value().result);
  CHECK(Refused(ReadComplete(Parse(R"({"lease_id":"l","results":1})"))) ==
        "unknown field 'results'");

  auto fail =
      ReadFail(Parse(R"({"lease_id":"lse_1","error":"boom","retryable":false,"retry_in_ms":250})"));
  REQUIRE(fail.ok());
  CHECK(fail.value().fail.error == "boom");
  CHECK_FALSE(fail.value().fail.retryable);
  CHECK(fail.value().fail.retry_in_ms == 250);
  auto defaults = ReadFail(Parse(R"({"lease_id":"lse_1"})"));
  REQUIRE(defaults.ok());
  CHECK(defaults.value().fail.retryable);
  CHECK(defaults.value().fail.error.empty());
  CHECK(Refused(ReadFail(Parse(R"({"lease_id":"l","reason":"x"})"))) == "unknown field 'reason'");
  CHECK(Has(Refused(ReadFail(Parse(R"({"lease_id":"l","retryable":"no"})"))), "'retryable'"));
  CHECK(Has(Refused(ReadFail(Parse(R"({"lease_id":"l","retry_in_ms":-1})"))), "'retry_in_ms'"));
  CHECK(Has(
      Refused(ReadFail(Parse(json{{"lease_id", "l"}, {"error", std::string(4097, 'e')}}.dump()))),
      "'error'"));

  for (const char* no_lease :
       {R"({})", R"({"lease_id":null})", R"({"lease_id":7})", R"({"lease_id":""})"}) {
    INFO(no_lease);
    Refused(ReadHeartbeat(Parse(no_lease)));
    Refused(ReadComplete(Parse(no_lease)));
    Refused(ReadFail(Parse(no_lease)));
  }
}

TEST_CASE("acks: each item's outcome and its own fields, in order") {
  auto r = ReadAcks(Parse(R"({"acks":[
      {"id":"job_1","lease_id":"lse_1","outcome":"succeeded","result":{"rows":3}},
      {"id":"job_2","lease_id":"lse_2","outcome":"succeeded"},
      {"id":"job_3","lease_id":"lse_3","outcome":"failed","error":"boom","retryable":false,
       "retry_in_ms":250},
      {"id":"job_4","lease_id":"lse_4","outcome":"failed"}]})"));
  REQUIRE(r.ok());
  const std::vector<AckItem>& a = r.value();
  REQUIRE(a.size() == 4);
  CHECK(a[0].id == "job_1");
  CHECK(a[0].lease_id == "lse_1");
  CHECK(a[0].succeeded);
  CHECK(a[0].result == std::string(R"({"rows":3})"));
  CHECK(a[1].succeeded);
  CHECK_FALSE(a[1].result);
  CHECK_FALSE(a[2].succeeded);
  CHECK(a[2].fail.error == "boom");
  CHECK_FALSE(a[2].fail.retryable);
  CHECK(a[2].fail.retry_in_ms == 250);
  CHECK_FALSE(a[3].succeeded);
  CHECK(a[3].fail.retryable);  // the defaults of POST /v1/jobs/{id}/fail
  CHECK(a[3].fail.error.empty());
  CHECK_FALSE(a[3].fail.retry_in_ms);
}

TEST_CASE("acks: a body or an item that does not fit refuses the whole request") {
  const std::string ok = R"({"id":"job_1","lease_id":"l","outcome":"succeeded"})";
  CHECK(Has(Refused(ReadAcks(Parse(R"({"acks":[]})"))), "non-empty"));
  Refused(ReadAcks(Parse(R"({})")));
  Refused(ReadAcks(Parse(R"({"acks":{}})")));
  Refused(ReadAcks(Parse(R"([])")));
  CHECK(Refused(ReadAcks(Parse(R"({"acks":[)" + ok + R"(],"more":1})"))) == "unknown field 'more'");
  std::string hundred = R"({"acks":[)";
  for (size_t i = 0; i < kMaxAcks; ++i) {
    if (i > 0) hundred += ',';
    hundred +=
        json{{"id", "job_" + std::to_string(i)}, {"lease_id", "l"}, {"outcome", "failed"}}.dump();
  }
  CHECK(ReadAcks(Parse(hundred + "]}")).ok());
  CHECK(Has(
      Refused(ReadAcks(Parse(hundred + R"(,{"id":"job_x","lease_id":"l","outcome":"failed"}]})"))),
      "at most 100"));
  CHECK(Has(Refused(ReadAcks(Parse(R"({"acks":[)" + ok + "," + ok + "]}"))),
            "'acks'[1]: job 'job_1' is acknowledged twice"));

  struct Bad {
    const char* item;
    const char* says;
  };
  for (const Bad& b : std::initializer_list<Bad>{
           {R"(7)", "object"},
           {R"({"lease_id":"l","outcome":"succeeded"})", "'id' is required"},
           {R"({"id":7,"lease_id":"l","outcome":"succeeded"})", "'id'"},
           {R"({"id":"job_1","outcome":"succeeded"})", "'lease_id'"},
           {R"({"id":"job_1","lease_id":"","outcome":"succeeded"})",
            "'lease_id' must not be empty"},
           {R"({"id":"job_1","lease_id":"l"})", "'outcome'"},
           {R"({"id":"job_1","lease_id":"l","outcome":"done"})", "'outcome'"},
           {R"({"id":"job_1","lease_id":"l","outcome":true})", "'outcome'"},
           {R"({"id":"job_1","lease_id":"l","outcome":"succeeded","error":"x"})", "'error'"},
           {R"({"id":"job_1","lease_id":"l","outcome":"succeeded","retry_in_ms":1})",
            "'retry_in_ms'"},
           {R"({"id":"job_1","lease_id":"l","outcome":"failed","result":1})", "'result'"},
           {R"({"id":"job_1","lease_id":"l","outcome":"failed","retryable":"no"})", "'retryable'"},
           {R"({"id":"job_1","lease_id":"l","outcome":"failed","retry_in_ms":86400001})",
            "'retry_in_ms'"},
           {R"({"id":"job_1","lease_id":"l","outcome":"failed","state":"x"})",
            "unknown field 'state'"},
       }) {
    INFO(b.item);
    std::string d = Refused(ReadAcks(Parse(std::string(R"({"acks":[)") + b.item + "]}")));
    CHECK(Has(d, "'acks'[0]: "));
    CHECK(Has(d, b.says));
  }
  CHECK(Has(Refused(ReadAcks(Parse(json{{"acks",
                                         {{{"id", "job_1"},
                                           {"lease_id", "l"},
                                           {"outcome", "failed"},
                                           {"error", std::string(4097, 'e')}}}}}
                                       .dump()))),
            "'error'"));
}

TEST_CASE("lease request: acks ride along, 0 to 100 of them, read as POST /v1/acks reads them") {
  auto none = ReadLeaseRequest(Parse(R"({"queues":["q"]})"), 30000);
  REQUIRE(none.ok());
  CHECK_FALSE(none.value().acks);
  auto empty = ReadLeaseRequest(Parse(R"({"queues":["q"],"acks":[]})"), 30000);
  REQUIRE(empty.ok());
  REQUIRE(empty.value().acks);
  CHECK(empty.value().acks->empty());
  auto two = ReadLeaseRequest(
      Parse(R"({"queues":["q"],"acks":[{"id":"job_1","lease_id":"a","outcome":"succeeded"},
                {"id":"job_2","lease_id":"b","outcome":"failed","retry_in_ms":0}]})"),
      30000);
  REQUIRE(two.ok());
  REQUIRE(two.value().acks);
  REQUIRE(two.value().acks->size() == 2);
  CHECK((*two.value().acks)[1].fail.retry_in_ms == 0);
  CHECK(Has(Refused(ReadLeaseRequest(
                Parse(R"({"queues":["q"],"acks":[{"id":"job_1","lease_id":"a"}]})"), 30000)),
            "'acks'[0]: "));
  Refused(ReadLeaseRequest(Parse(R"({"queues":["q"],"acks":null})"), 30000));
}

TEST_CASE("token request: scopes, a tenant name, queue names; nothing else") {
  auto t = ReadTokenRequest(Parse(R"({"scopes":["submit"],"tenant":"acme"})"));
  REQUIRE(t.ok());
  CHECK(t.value().scopes == std::vector<Scope>{Scope::kSubmit});
  CHECK(t.value().tenant == "acme");
  CHECK_FALSE(t.value().queues);
  auto w = ReadTokenRequest(Parse(R"({"scopes":["work"],"queues":["report-export"]})"));
  REQUIRE(w.ok());
  CHECK(w.value().queues == std::vector<std::string>{"report-export"});
  CHECK_FALSE(w.value().tenant);

  CHECK(Refused(ReadTokenRequest(Parse(R"({"scopes":["work"],"tenants":"acme"})"))) ==
        "unknown field 'tenants'");
  CHECK(Has(Refused(ReadTokenRequest(Parse(R"({"scopes":["submit"]})"))), "needs a 'tenant'"));
  CHECK(Has(Refused(ReadTokenRequest(Parse(R"({"scopes":["root"]})"))), "unknown scope 'root'"));
  Refused(ReadTokenRequest(Parse(R"({"scopes":[]})")));
  for (const char* tenant :
       {R"("")", R"(".")", R"("..")", R"("a b")", R"("a\u0000b")", R"("caf\u00e9")", R"(7)"}) {
    INFO(tenant);
    std::string d = Refused(
        ReadTokenRequest(Parse(std::string(R"({"scopes":["submit"],"tenant":)") + tenant + "}")));
    CHECK(Has(d, "'tenant'"));
  }
  CHECK(Has(Refused(ReadTokenRequest(Parse(R"({"scopes":["work"],"queues":["ok","."]})"))),
            "'queues'[1]: queue name '.'"));
  Refused(ReadTokenRequest(Parse(R"({"scopes":["work"],"queues":"q"})")));
}

TEST_CASE("policy: the tenants map's keys are tenant names") {
  auto p = ReadPolicy(Parse(R"({"rate":1,"tenants":{"acme":{"rate":2},"team@globex":{}}})"));
  REQUIRE(p.ok());
  CHECK(p.value().tenants.count("team@globex") == 1);
  for (const char* bad : {R"({"rate":1,"tenants":{"..":{}}})", R"({"rate":1,"tenants":{"a b":{}}})",
                          R"({"rate":1,"tenants":{"a\u0007":{}}})"}) {
    INFO(bad);
    CHECK(Has(Refused(ReadPolicy(Parse(bad))), "policy field 'tenants': tenant name"));
  }
  json long_name = {{"rate", 1}, {"tenants", {{std::string(129, 't'), json::object()}}}};
  Refused(ReadPolicy(long_name));
  Refused(ReadPolicy(Parse(R"({"rate":1,"surprise":1})")));  // PolicyFromJson's own refusal
}

TEST_CASE("ids in paths: one that cannot have been issued is 404") {
  CHECK(CheckJobIdInPath("job_018f2a3b4c5d6e0a1b2c3d4e5f").ok());
  CHECK(CheckTokenIdInPath("tok_ci").ok());
  for (std::string bad : {std::string(""), std::string("."), std::string("job.1"),
                          std::string("job\xFF"), std::string(65, 'j'), std::string("a b")}) {
    INFO(QuoteForMessage(bad));
    Status job = CheckJobIdInPath(bad);
    REQUIRE_FALSE(job.ok());
    CHECK(job.error().code == ErrorCode::kNotFound);
    CHECK(IsValidUtf8(job.error().detail));
    CHECK(Has(job.error().detail, "does not exist"));
    Status token = CheckTokenIdInPath(bad);
    REQUIRE_FALSE(token.ok());
    CHECK(token.error().code == ErrorCode::kNotFound);
  }
}

}  // namespace
}  // namespace sluice
