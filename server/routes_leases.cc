// The worker protocol: POST /v1/leases (long-poll), /v1/jobs/{id}/complete, /fail.
#include <nlohmann/json.hpp>

#include "common/utf8.h"
#include "server/app.h"
#include "server/errors.h"
#include "server/http.h"
#include "server/request_readers.h"

namespace sluice {
namespace {

using nlohmann::json;

// Authorizes and reads a long-poll for leases: a work token, a body that reads, and
// queues the token may work on that exist.
Result<LeaseAsk> ReadLease(App& app, const HttpRequest& req) {
  auto who = app.auth.Require(req, Scope::kWork);
  if (!who.ok()) return who.error();
  auto body = ParseJsonObject(req);
  if (!body.ok()) return body.error();
  auto ask = ReadLeaseRequest(body.value(), app.max_wait_ms);
  if (!ask.ok()) return ask;
  for (const std::string& name : ask.value().lease.queues) {
    if (!who.value().MayWorkOn(name)) {
      return MakeError(ErrorCode::kForbidden,
                       "this token may not work on queue " + QuoteForMessage(name));
    }
    auto known = app.store.CheckQueue(name);
    if (!known.ok()) return known.error();
  }
  return ask;
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

// What complete, fail and heartbeat share: a work token, a job id that could exist, a
// body that `read` accepts, and (for a token limited to some queues) a job on one of
// them; someone else's job is 404, as a missing one is.
template <typename Ask>
Result<Ask> ReadAck(App& app, const HttpRequest& req, Result<Ask> (*read)(const json&)) {
  auto who = app.auth.Require(req, Scope::kWork);
  if (!who.ok()) return who.error();
  const std::string& id = req.matches[1];
  if (Status st = CheckJobIdInPath(id); !st.ok()) return st.error();
  auto body = ParseJsonObject(req);
  if (!body.ok()) return body.error();
  Result<Ask> ask = read(body.value());
  if (!ask.ok()) return ask;
  if (who.value().queues) {
    auto job = app.store.GetJob(id);
    if (!job.ok()) return job.error();
    if (!who.value().MayWorkOn(job.value().queue)) {
      return MakeError(ErrorCode::kNotFound, "job " + QuoteForMessage(id) + " does not exist");
    }
  }
  return ask;
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
  auto ask = ReadAck(app, req, ReadComplete);
  if (!ask.ok()) return reply.Send(ErrorResponse(ask.error()));
  app.store.CompleteAsync(
      req.matches[1], std::move(ask.value().lease_id), std::move(ask.value().result),
      app.clock.Now(), [&app, reply](Result<JobRecord> job) {
        AnswerJob(reply, std::move(job), [&app] { app.dispatcher.NotifyLeaseEnded(); });
      });
}

void Fail(App& app, const HttpRequest& req, Reply reply) {
  auto ask = ReadAck(app, req, ReadFail);
  if (!ask.ok()) return reply.Send(ErrorResponse(ask.error()));
  app.store.FailAsync(req.matches[1], std::move(ask.value().lease_id), std::move(ask.value().fail),
                      app.clock.Now(), [&app, reply](Result<JobRecord> job) {
                        AnswerJob(reply, std::move(job), [&app] { app.dispatcher.Notify(); });
                      });
}

void Heartbeat(App& app, const HttpRequest& req, Reply reply) {
  auto ask = ReadAck(app, req, ReadHeartbeat);
  if (!ask.ok()) return reply.Send(ErrorResponse(ask.error()));
  const std::string lease_id = ask.value().lease_id;
  app.store.HeartbeatAsync(
      req.matches[1], lease_id, ask.value().extend_ms, app.clock.Now(),
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
