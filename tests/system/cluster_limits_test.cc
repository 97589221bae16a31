// Several sluiced on one PostgreSQL database (testutil/cluster.h) behave as one
// (DESIGN.md, Architecture: "Rate, caps, fairness and intake answers are global"):
// submitters and long-polling workers spread over three instances, and the limits are
// checked on what the database recorded (release times on its clock) and on what the
// workers held.
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/system/cluster_load.h"
#include "tests/testutil/cluster.h"

namespace sluice::testing {
namespace {

using namespace cluster_load;  // NOLINT(build/namespaces)
using std::chrono::milliseconds;

std::string ProcMaps(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/maps");
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST_CASE("cluster: three sluiced on one database share queues tokens and jobs",
          "[cluster][postgres]") {
  Cluster cluster;
  REQUIRE(cluster.size() == 3);
  cluster.Admin(0, "PUT", "/v1/admin/queues/smoke", {{"rate", 1000}, {"capacity", 100}});
  const std::string submit = cluster.CreateToken({"submit"}, "acme");
  const std::string work = cluster.CreateToken({"work"});

  // A token made through instance 0 is honoured by instance 1 (within a second or so).
  InstanceConn via1(cluster[1], submit);
  std::optional<HttpResult> admitted;
  REQUIRE(PollUntil(
      [&] {
        admitted = via1.Post("/v1/queues/smoke/jobs", {{"payload", {{"n", 1}}}});
        return admitted && admitted->status == 202;
      },
      std::chrono::seconds(5)));
  const std::string id = admitted->body["id"];
  CHECK(cluster.QueryInt("SELECT count(*) FROM jobs WHERE id = $1 AND state = 'queued'", {id}) ==
        1);

  // Leased through instance 2, completed through instance 0.
  InstanceConn via2(cluster[2], work);
  auto lease = via2.Post("/v1/leases", {{"queues", {"smoke"}}, {"wait_ms", 2000}});
  REQUIRE(lease);
  REQUIRE(lease->status == 200);
  REQUIRE(lease->body["jobs"].size() == 1);
  CHECK(lease->body["jobs"][0]["id"] == id);
  InstanceConn via0(cluster[0], work);
  auto done =
      via0.Post("/v1/jobs/" + id + "/complete", {{"lease_id", lease->body["jobs"][0]["lease_id"]}});
  REQUIRE(done);
  CHECK(done->status == 200);
  CHECK(cluster.QueryInt("SELECT count(*) FROM jobs WHERE id = $1 AND state = 'succeeded'", {id}) ==
        1);

  // Killed and restarted on the same port, then on a new one; under faketime.
  const int port = cluster[1].port();
  const pid_t pid = cluster[1].pid();
  CHECK(cluster[1].Kill() == -SIGKILL);
  CHECK_FALSE(cluster[1].running());
  cluster[1].Restart();
  CHECK(cluster[1].port() == port);
  CHECK(cluster[1].pid() != pid);
  cluster[1].options().env = FaketimeEnv("+7s");
  cluster[1].Restart(/*new_port=*/true);
  CHECK(ProcMaps(cluster[1].pid()).find("libfaketime") != std::string::npos);
  auto again = via1.Post("/v1/queues/smoke/jobs", {{"payload", {{"n", 2}}}});
  REQUIRE(again);
  CHECK(again->status == 202);
  CHECK(cluster[1].CpuSeconds() >= 0);
  CHECK(cluster.QueryInt("SELECT count(*) FROM jobs") == 2);
}

}  // namespace
}  // namespace sluice::testing
