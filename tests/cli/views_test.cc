// The CLI's views: server JSON (as sluiced renders it) to text. No server involved.
#include "cli/views.h"

#include <catch2/catch.hpp>

namespace sluice::cli {
namespace {

using nlohmann::json;

// A queue as QueueToJson (server/http.cc) renders it.
json Queue(const std::string& name, bool paused, double rate, int queued) {
  return {{"name", name},
          {"paused", paused},
          {"rate", rate},
          {"capacity", 20},
          {"burst", 1},
          {"version", 3},
          {"tenants", json::object()},
          {"stats", {{"queued", queued}, {"queued_cost", queued * 2}, {"leased", 1}}}};
}

TEST_CASE("views: queues shows policy, depth and version per queue") {
  json answer = {{"queues", {Queue("report-export", false, 2, 7), Queue("reindex", true, 0.5, 0)}},
                 {"waiting_leases", 4}};
  CHECK(QueuesView(answer) ==
        "QUEUE          PAUSED  RATE/S  CAPACITY  QUEUED  QUEUED_COST  LEASED  VERSION\n"
        "report-export  no           2        20       7           14       1        3\n"
        "reindex        yes        0.5        20       0            0       1        3\n"
        "workers waiting: 4\n");
  CHECK(QueuesView({{"queues", json::array()}, {"waiting_leases", 0}}) ==
        "no queues\nworkers waiting: 0\n");
}

TEST_CASE("views: tenants shows each bucket with nulls as '-' and readable ages") {
  json answer = {{"queue", "report-export"},
                 {"tenants",
                  {{{"tenant", "acme"},
                    {"queued", 3},
                    {"queued_cost", 3},
                    {"leased", 1},
                    {"next_release_at", "2026-11-29T23:39:39.166Z"},
                    {"oldest_queued_age_ms", 12'345},
                    {"rate", 2.0},
                    {"capacity", 20}},
                   {{"tenant", "globex"},
                    {"queued", 0},
                    {"queued_cost", 0},
                    {"leased", 2},
                    {"next_release_at", nullptr},
                    {"oldest_queued_age_ms", nullptr},
                    {"rate", 1.0 / 3},
                    {"capacity", 10}}}}};
  CHECK(TenantsView(answer) ==
        "TENANT  QUEUED  QUEUED_COST  LEASED  NEXT_RELEASE              OLDEST_AGE  RATE/S  "
        "CAPACITY\n"
        "acme         3            3       1  2026-11-29T23:39:39.166Z       12.3s       2  "
        "      20\n"
        "globex       0            0       2  -                                  -   0.333  "
        "      10\n");
  CHECK(TenantsView({{"queue", "q"}, {"tenants", json::array()}}) ==
        "no tenants have jobs in queue q\n");
}

TEST_CASE("views: jobs list one line per job, a job shows blocked_by while queued") {
  json job = {{"id", "job_1"},
              {"queue", "q"},
              {"tenant", "acme"},
              {"state", "queued"},
              {"cost", 2},
              {"attempt", 0},
              {"max_attempts", 3},
              {"created_at", "2026-01-01T00:00:00.000Z"},
              {"blocked_by", "paused"},
              {"estimated_start", "2026-01-01T00:00:01.000Z"},
              {"payload", {{"report", "usage"}}}};
  CHECK(JobsView(json::array({job})) ==
        "ID     QUEUE  TENANT  STATE   COST  ATTEMPT  CREATED\n"
        "job_1  q      acme    queued     2      0/3  2026-01-01T00:00:00.000Z\n");
  CHECK(JobsView(json::array()) == "no jobs\n");
  std::string one = JobView(job);
  CHECK(one.find("blocked_by        paused\n") != std::string::npos);
  CHECK(one.find("estimated_start   2026-01-01T00:00:01.000Z\n") != std::string::npos);
  CHECK(one.find("payload           {\"report\":\"usage\"}\n") != std::string::npos);
  CHECK(one.find("attempt           0 of 3\n") != std::string::npos);

  job["state"] = "succeeded";
  CHECK(JobView(job).find("blocked_by") == std::string::npos);
}

TEST_CASE("views: a long payload is cut in the detail view") {
  json job = {{"id", "job_1"}, {"state", "succeeded"}, {"payload", std::string(500, 'x')}};
  std::string one = JobView(job);
  CHECK(one.find(std::string(200, 'x') + "...\n") != std::string::npos);
  CHECK(one.find(std::string(201, 'x')) == std::string::npos);
}

TEST_CASE("views: the token list never shows a secret, even if the server sent one") {
  json answer = {{"tokens",
                  {{{"id", "tok_1"},
                    {"tenant", "acme"},
                    {"scopes", {"submit"}},
                    {"queues", nullptr},
                    {"created_at", "2026-01-01T00:00:00.000Z"},
                    {"revoked_at", nullptr},
                    {"token", "sl_SECRET"},
                    {"secret_hash", "abc"}}}}};
  std::string out = TokensView(answer);
  CHECK(out ==
        "ID     TENANT  SCOPES  QUEUES  CREATED                   REVOKED\n"
        "tok_1  acme    submit  -       2026-01-01T00:00:00.000Z  -\n");
  CHECK(out.find("SECRET") == std::string::npos);
}

TEST_CASE("views: a created token is shown once with its scopes") {
  json answer = {{"id", "tok_1"},
                 {"token", "sl_plain"},
                 {"tenant", nullptr},
                 {"scopes", {"work", "admin"}},
                 {"queues", {"a", "b"}}};
  CHECK(CreatedTokenView(answer) ==
        "id      tok_1\n"
        "token   sl_plain\n"
        "tenant  -\n"
        "scopes  work,admin\n"
        "queues  a,b\n");
}

TEST_CASE("views: submit, pause, revoke say what happened in one line") {
  json job = {{"id", "job_9"}, {"state", "queued"}, {"estimated_start", "2026-01-01T00:00:00Z"}};
  CHECK(SubmittedView(job, false) == "job_9  queued  estimated_start 2026-01-01T00:00:00Z\n");
  CHECK(SubmittedView(job, true).find("idempotent replay") != std::string::npos);
  CHECK(PausedView(Queue("q", true, 1, 0)) ==
        "queue q: paused (intake goes on, nothing is dispatched)\n");
  CHECK(PausedView(Queue("q", false, 1, 0)) == "queue q: dispatching\n");
  CHECK(RevokedView({{"id", "tok_1"}, {"revoked_at", "2026-01-01T00:00:00.000Z"}}) ==
        "token tok_1 revoked at 2026-01-01T00:00:00.000Z\n");
}

TEST_CASE("views: cells of every JSON type") {
  CHECK(Cell(nullptr).empty());
  CHECK(Cell("s") == "s");
  CHECK(Cell(true) == "yes");
  CHECK(Cell(false) == "no");
  CHECK(Cell(42) == "42");
  CHECK(Cell(-7) == "-7");
  CHECK(Cell(0.25) == "0.25");
  CHECK(Cell(json::array({"a", 1})) == "a,1");
  CHECK(Cell(json{{"k", 1}}) == "{\"k\":1}");
  CHECK(Field(json::object(), "missing").empty());
  CHECK(Field(json::array(), "x").empty());
}

}  // namespace
}  // namespace sluice::cli
