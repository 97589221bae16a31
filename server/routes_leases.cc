// The worker protocol: POST /v1/leases (long-poll), /v1/jobs/{id}/complete, /fail.
#include <nlohmann/json.hpp>

#include "server/app.h"
#include "server/errors.h"
#include "server/http.h"

namespace sluice {
namespace {

using nlohmann::json;

void Lease(App& app, const httplib::Request& req, httplib::Response& res) {
  auto who = app.auth.Require(req, Scope::kWork);
  if (!who.ok()) return RenderError(res, who.error());
  auto body = ParseJsonObject(req);
  if (!body.ok()) return RenderError(res, body.error());
  const json& b = body.value();

  LeaseRequest lease;
  auto queues = b.find("queues");
  if (queues == b.end() || !queues->is_array() || queues->empty()) {
    return RenderError(res, MakeError(ErrorCode::kBadRequest,
                                      "'queues' must be a non-empty array of queue names"));
  }
  for (const json& q : *queues) {
    if (!q.is_string()) {
      return RenderError(res, MakeError(ErrorCode::kBadRequest, "'queues' must hold strings"));
    }
    std::string name = q.get<std::string>();
    if (!who.value().MayWorkOn(name)) {
      return RenderError(
          res, MakeError(ErrorCode::kForbidden, "this token may not work on queue '" + name + "'"));
    }
    auto info = app.store.GetQueue(name);
    if (!info.ok()) return RenderError(res, info.error());
    lease.queues.push_back(name);
  }
  auto max_jobs = IntField(b, "max_jobs", 1, 100);
  if (!max_jobs.ok()) return RenderError(res, max_jobs.error());
  lease.max_jobs = max_jobs.value().value_or(1);
  auto wait_ms = IntField(b, "wait_ms", 0, app.max_wait_ms);
  if (!wait_ms.ok()) return RenderError(res, wait_ms.error());
  auto lease_ms = IntField(b, "lease_ms", 100, 24LL * 3600 * 1000);
  if (!lease_ms.ok()) return RenderError(res, lease_ms.error());
  lease.lease_ms = lease_ms.value();
  auto worker_id = StringField(b, "worker_id", 200);
  if (!worker_id.ok()) return RenderError(res, worker_id.error());
  lease.worker_id = worker_id.value().value_or("");

  auto jobs = app.dispatcher.Lease(std::move(lease),
                                   std::chrono::milliseconds(wait_ms.value().value_or(0)));
  if (!jobs.ok()) return RenderError(res, jobs.error());
  json out = json::array();
  for (const JobRecord& j : jobs.value()) out.push_back(LeasedJobToJson(j));
  RenderJson(res, 200, {{"jobs", out}});
}

// Authorizes a worker for the job's queue and reads the lease_id from the body.
Result<std::string> LeaseIdFor(App& app, const httplib::Request& req, const Result<Principal>& who,
                               const json& body) {
  auto lease_id = StringField(body, "lease_id", 200);
  if (!lease_id.ok()) return lease_id.error();
  if (!lease_id.value()) return MakeError(ErrorCode::kBadRequest, "'lease_id' is required");
  if (who.value().queues) {
    auto job = app.store.GetJob(req.matches[1]);
    if (!job.ok()) return job.error();
    if (!who.value().MayWorkOn(job.value().queue)) {
      return MakeError(ErrorCode::kNotFound,
                       "job '" + std::string(req.matches[1]) + "' does not exist");
    }
  }
  return *lease_id.value();
}

// What complete, fail and heartbeat share: a work token allowed on the job's queue,
// a JSON body, and its lease_id.
struct Ack {
  json body;
  std::string lease_id;
};

Result<Ack> ParseAck(App& app, const httplib::Request& req) {
  auto who = app.auth.Require(req, Scope::kWork);
  if (!who.ok()) return who.error();
  auto body = ParseJsonObject(req);
  if (!body.ok()) return body.error();
  auto lease_id = LeaseIdFor(app, req, who, body.value());
  if (!lease_id.ok()) return lease_id.error();
  return Ack{body.value(), lease_id.value()};
}

void Complete(App& app, const httplib::Request& req, httplib::Response& res) {
  auto ack = ParseAck(app, req);
  if (!ack.ok()) return RenderError(res, ack.error());
  const json& body = ack.value().body;
  const std::string& lease_id = ack.value().lease_id;
  std::optional<std::string> result;
  if (auto it = body.find("result"); it != body.end()) result = it->dump();
  auto job = app.store.Complete(req.matches[1], lease_id, result, app.clock.Now());
  if (!job.ok()) return RenderError(res, job.error());
  app.dispatcher.NotifyLeaseEnded();
  RenderJson(res, 200, JobToJson(job.value()));
}

void Fail(App& app, const httplib::Request& req, httplib::Response& res) {
  auto ack = ParseAck(app, req);
  if (!ack.ok()) return RenderError(res, ack.error());
  const json& body = ack.value().body;
  const std::string& lease_id = ack.value().lease_id;
  FailRequest fail;
  auto error = StringField(body, "error", 4096);
  if (!error.ok()) return RenderError(res, error.error());
  fail.error = error.value().value_or("");
  auto retryable = BoolField(body, "retryable");
  if (!retryable.ok()) return RenderError(res, retryable.error());
  fail.retryable = retryable.value().value_or(true);
  auto retry_in = IntField(body, "retry_in_ms", 0, 24LL * 3600 * 1000);
  if (!retry_in.ok()) return RenderError(res, retry_in.error());
  fail.retry_in_ms = retry_in.value();
  auto job = app.store.Fail(req.matches[1], lease_id, fail, app.clock.Now());
  if (!job.ok()) return RenderError(res, job.error());
  app.dispatcher.Notify();
  RenderJson(res, 200, JobToJson(job.value()));
}

void Heartbeat(App& app, const httplib::Request& req, httplib::Response& res) {
  auto ack = ParseAck(app, req);
  if (!ack.ok()) return RenderError(res, ack.error());
  const json& body = ack.value().body;
  const std::string& lease_id = ack.value().lease_id;
  auto extend = IntField(body, "extend_ms", 100, 24LL * 3600 * 1000);
  if (!extend.ok()) return RenderError(res, extend.error());
  auto job = app.store.Heartbeat(req.matches[1], lease_id, extend.value(), app.clock.Now());
  if (!job.ok()) return RenderError(res, job.error());
  RenderJson(res, 200,
             {{"id", job.value().id},
              {"lease_id", lease_id},
              {"lease_expires_at", FormatRfc3339(job.value().lease_expires_at.value_or(0))}});
}

}  // namespace

void RegisterLeaseRoutes(httplib::Server& server, App& app) {
  server.Post("/v1/leases", [&app](const httplib::Request& req, httplib::Response& res) {
    Lease(app, req, res);
  });
  server.Post(
      R"(/v1/jobs/([^/]+)/complete)",
      [&app](const httplib::Request& req, httplib::Response& res) { Complete(app, req, res); });
  server.Post(
      R"(/v1/jobs/([^/]+)/heartbeat)",
      [&app](const httplib::Request& req, httplib::Response& res) { Heartbeat(app, req, res); });
  server.Post(R"(/v1/jobs/([^/]+)/fail)",
              [&app](const httplib::Request& req, httplib::Response& res) { Fail(app, req, res); });
}

}  // namespace sluice
