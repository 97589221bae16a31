// The worker protocol: POST /v1/leases (long-poll), /v1/jobs/{id}/complete, /fail.
#include <nlohmann/json.hpp>

#include "server/app.h"
#include "server/errors.h"
#include "server/http.h"

namespace sluice {
namespace {

using nlohmann::json;

struct LeaseAsk {
  LeaseRequest lease;
  std::chrono::milliseconds wait{0};
};

// Authorizes and reads a long-poll for leases.
Result<LeaseAsk> ReadLease(App& app, const HttpRequest& req) {
  auto who = app.auth.Require(req, Scope::kWork);
  if (!who.ok()) return who.error();
  auto body = ParseJsonObject(req);
  if (!body.ok()) return body.error();
  const json& b = body.value();

  LeaseRequest lease;
  auto queues = b.find("queues");
  if (queues == b.end() || !queues->is_array() || queues->empty()) {
    return MakeError(ErrorCode::kBadRequest, "'queues' must be a non-empty array of queue names");
  }
  for (const json& q : *queues) {
    if (!q.is_string()) {
      return MakeError(ErrorCode::kBadRequest, "'queues' must hold strings");
    }
    std::string name = q.get<std::string>();
    if (!who.value().MayWorkOn(name)) {
      return MakeError(ErrorCode::kForbidden, "this token may not work on queue '" + name + "'");
    }
    auto known = app.store.CheckQueue(name);
    if (!known.ok()) return known.error();
    lease.queues.push_back(name);
  }
  auto max_jobs = IntField(b, "max_jobs", 1, 100);
  if (!max_jobs.ok()) return max_jobs.error();
  lease.max_jobs = max_jobs.value().value_or(1);
  auto wait_ms = IntField(b, "wait_ms", 0, app.max_wait_ms);
  if (!wait_ms.ok()) return wait_ms.error();
  auto lease_ms = IntField(b, "lease_ms", 100, 24LL * 3600 * 1000);
  if (!lease_ms.ok()) return lease_ms.error();
  lease.lease_ms = lease_ms.value();
  auto worker_id = StringField(b, "worker_id", 200);
  if (!worker_id.ok()) return worker_id.error();
  lease.worker_id = worker_id.value().value_or("");

  return LeaseAsk{std::move(lease), std::chrono::milliseconds(wait_ms.value().value_or(0))};
}

void Lease(App& app, const HttpRequest& req, Reply reply) {
  auto ask = ReadLease(app, req);
  if (!ask.ok()) return reply.Send(ErrorResponse(ask.error()));
  app.dispatcher.LeaseAsync(
      std::move(ask.value().lease), ask.value().wait,
      [reply](Result<std::vector<JobRecord>> jobs) {
        // On the dispatcher's thread: render elsewhere.
        reply.Later([jobs = std::move(jobs)](HttpResponse& res) {
          if (!jobs.ok()) return RenderError(res, jobs.error());
          std::string body = "{\"jobs\":[";
          for (const JobRecord& j : jobs.value()) {
            if (&j != &jobs.value().front()) body += ',';
            body += LeasedJobJson(j);
          }
          body += "]}";
          res.status = 200;
          res.set_content(std::move(body), "application/json");
        });
      },
      [reply] { return reply.PeerGone(); });
}

// Authorizes a worker for the job's queue and reads the lease_id from the body.
Result<std::string> LeaseIdFor(App& app, const HttpRequest& req, const Result<Principal>& who,
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

Result<Ack> ParseAck(App& app, const HttpRequest& req) {
  auto who = app.auth.Require(req, Scope::kWork);
  if (!who.ok()) return who.error();
  auto body = ParseJsonObject(req);
  if (!body.ok()) return body.error();
  auto lease_id = LeaseIdFor(app, req, who, body.value());
  if (!lease_id.ok()) return lease_id.error();
  return Ack{body.value(), lease_id.value()};
}

// Renders a job the store changed, on the connection's thread.
void AnswerJob(const Reply& reply, Result<JobRecord> job, std::function<void()> after = nullptr) {
  reply.Later([job = std::move(job), after = std::move(after)](HttpResponse& res) {
    if (!job.ok()) return RenderError(res, job.error());
    if (after) after();
    RenderJob(res, 200, job.value());
  });
}

void Complete(App& app, const HttpRequest& req, Reply reply) {
  auto ack = ParseAck(app, req);
  if (!ack.ok()) return reply.Send(ErrorResponse(ack.error()));
  const json& body = ack.value().body;
  std::optional<std::string> result;
  if (auto it = body.find("result"); it != body.end()) result = it->dump();
  app.store.CompleteAsync(req.matches[1], std::move(ack.value().lease_id), std::move(result),
                          app.clock.Now(), [&app, reply](Result<JobRecord> job) {
                            AnswerJob(reply, std::move(job),
                                      [&app] { app.dispatcher.NotifyLeaseEnded(); });
                          });
}

void Fail(App& app, const HttpRequest& req, Reply reply) {
  auto ack = ParseAck(app, req);
  if (!ack.ok()) return reply.Send(ErrorResponse(ack.error()));
  const json& body = ack.value().body;
  FailRequest fail;
  auto error = StringField(body, "error", 4096);
  if (!error.ok()) return reply.Send(ErrorResponse(error.error()));
  fail.error = error.value().value_or("");
  auto retryable = BoolField(body, "retryable");
  if (!retryable.ok()) return reply.Send(ErrorResponse(retryable.error()));
  fail.retryable = retryable.value().value_or(true);
  auto retry_in = IntField(body, "retry_in_ms", 0, 24LL * 3600 * 1000);
  if (!retry_in.ok()) return reply.Send(ErrorResponse(retry_in.error()));
  fail.retry_in_ms = retry_in.value();
  app.store.FailAsync(req.matches[1], std::move(ack.value().lease_id), std::move(fail),
                      app.clock.Now(), [&app, reply](Result<JobRecord> job) {
                        AnswerJob(reply, std::move(job), [&app] { app.dispatcher.Notify(); });
                      });
}

void Heartbeat(App& app, const HttpRequest& req, Reply reply) {
  auto ack = ParseAck(app, req);
  if (!ack.ok()) return reply.Send(ErrorResponse(ack.error()));
  auto extend = IntField(ack.value().body, "extend_ms", 100, 24LL * 3600 * 1000);
  if (!extend.ok()) return reply.Send(ErrorResponse(extend.error()));
  const std::string lease_id = ack.value().lease_id;
  app.store.HeartbeatAsync(
      req.matches[1], lease_id, extend.value(), app.clock.Now(),
      [reply, lease_id](Result<JobRecord> job) {
        reply.Later([job = std::move(job), lease_id](HttpResponse& res) {
          if (!job.ok()) return RenderError(res, job.error());
          RenderJson(
              res, 200,
              {{"id", job.value().id},
               {"lease_id", lease_id},
               {"lease_expires_at", FormatRfc3339(job.value().lease_expires_at.value_or(0))}});
        });
      });
}

}  // namespace

void RegisterLeaseRoutes(Router& router, App& app) {
  router.AddLongPoll("POST", "/v1/leases",
                     [&app](const HttpRequest& req, Reply reply) { Lease(app, req, reply); });
  router.AddAsync("POST", "/v1/jobs/{}/complete",
                  [&app](const HttpRequest& req, Reply reply) { Complete(app, req, reply); });
  router.AddAsync("POST", "/v1/jobs/{}/heartbeat",
                  [&app](const HttpRequest& req, Reply reply) { Heartbeat(app, req, reply); });
  router.AddAsync("POST", "/v1/jobs/{}/fail",
                  [&app](const HttpRequest& req, Reply reply) { Fail(app, req, reply); });
}

}  // namespace sluice
