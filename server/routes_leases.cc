// The worker protocol: POST /v1/leases (long-poll, acks on the way in), /v1/acks (a
// batch), /v1/jobs/{id}/complete, /fail, /heartbeat.
#include <nlohmann/json.hpp>

#include "common/utf8.h"
#include "server/app.h"
#include "server/errors.h"
#include "server/http.h"
#include "server/request_readers.h"
#include "store/job_state.h"

namespace sluice {
namespace {

using nlohmann::json;

// Authorizes and reads a long-poll for leases: a work token, a body that reads, and
// queues the token may work on that exist.
Result<LeaseAsk> ReadLease(App& app, const HttpRequest& req, Principal& caller) {
  auto who = app.auth.Require(req, Scope::kWork);
  if (!who.ok()) return who.error();
  caller = who.value();
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

// ---- Batch acks (POST /v1/acks, and acks riding on a lease request) ----------------

using AckResults = std::vector<Result<JobRecord>>;
using AckDone = std::function<void(Result<AckResults>)>;

// Puts the store's results into their places among the screened ones, and tells the
// dispatcher what ended, as the single routes do: a success may free a cap, a fail may
// queue a retry.
void Place(App& app, AckResults& stored, const std::vector<size_t>& where, AckResults& into) {
  bool lease_ended = false;
  bool work = false;
  for (size_t i = 0; i < where.size(); ++i) {
    if (stored[i].ok()) {
      const bool succeeded = stored[i].value().state == JobState::kSucceeded;
      lease_ended = lease_ended || succeeded;
      work = work || !succeeded;
    }
    into[where[i]] = std::move(stored[i]);
  }
  if (lease_ended) app.dispatcher.NotifyLeaseEnded();
  if (work) app.dispatcher.Notify();
}

// Applies `acks` in one store transaction and calls `done` (on a store thread, or here
// when nothing reaches the store) with one result per ack, in order. Authorized as the
// single acks are: an id sluice could not have issued is not_found and never reaches
// the store; for a token limited to some queues, a job of another queue is not_found. The
// dispatcher hears of what ended before `done` runs.
void ApplyAcks(App& app, const Principal& who, std::vector<AckItem> acks, AckDone done) {
  AckResults screened;
  std::vector<AckItem> allowed;
  std::vector<size_t> where;  // screened index of each allowed ack
  for (AckItem& a : acks) {
    Status st = CheckJobIdInPath(a.id);
    if (!st.ok()) {
      screened.emplace_back(st.error());
      continue;
    }
    where.push_back(screened.size());
    screened.emplace_back(MakeError(ErrorCode::kInternal, "not acknowledged"));
    allowed.push_back(std::move(a));
  }
  if (allowed.empty()) return done(std::move(screened));
  // A token limited to some queues: the store checks each job's queue in the same
  // transaction (no read of its own per ack).
  app.store.AckManyAsync(std::move(allowed), who.queues, app.clock.Now(),
                         [&app, screened = std::move(screened), where = std::move(where),
                          done = std::move(done)](Result<AckResults> r) mutable {
                           if (!r.ok()) return done(r.error());
                           Place(app, r.value(), where, screened);
                           done(std::move(screened));
                         });
}

// One ack's result: {"id", "state"}, or {"id", "error", "status", "detail"}.
json AckResultJson(const std::string& id, const Result<JobRecord>& r) {
  if (r.ok()) return {{"id", id}, {"state", JobStateName(r.value().state)}};
  json item = ProblemItem(r.error());
  item["id"] = id;
  return item;
}

json AckResultsJson(const std::vector<std::string>& ids, const AckResults& results) {
  json out = json::array();
  for (size_t i = 0; i < ids.size(); ++i) out.push_back(AckResultJson(ids[i], results[i]));
  return out;
}

std::vector<std::string> AckIds(const std::vector<AckItem>& acks) {
  std::vector<std::string> ids;
  ids.reserve(acks.size());
  for (const AckItem& a : acks) ids.push_back(a.id);
  return ids;
}

void Acks(App& app, const HttpRequest& req, Reply reply) {
  auto who = app.auth.Require(req, Scope::kWork);
  if (!who.ok()) return reply.Send(ErrorResponse(who.error()));
  auto body = ParseJsonObject(req);
  if (!body.ok()) return reply.Send(ErrorResponse(body.error()));
  auto acks = ReadAcks(body.value());
  if (!acks.ok()) return reply.Send(ErrorResponse(acks.error()));
  std::vector<std::string> ids = AckIds(acks.value());
  ApplyAcks(app, who.value(), std::move(acks.value()),
            [reply, ids = std::move(ids)](Result<AckResults> r) {
              reply.Later([r = std::move(r), ids](HttpResponse& res) {
                if (!r.ok()) return RenderError(res, r.error());
                RenderJson(res, 200, {{"results", AckResultsJson(ids, r.value())}});
              });
            });
}

// ---- Leases ------------------------------------------------------------------------

// The acks a lease request carried, with their results, rendered into its answer.
struct CarriedAcks {
  std::vector<std::string> ids;
  AckResults results;
};

// Parks the long-poll; the answer carries `acks`' results when given. Those acks are
// durable whatever the lease comes to: should it fail, the answer is no jobs and the
// acks' results (the next lease request meets that failure itself), not an error that
// would leave the worker guessing about its acks.
void ParkLease(App& app, LeaseAsk ask, Reply reply, std::shared_ptr<const CarriedAcks> acks) {
  app.dispatcher.LeaseAsync(
      std::move(ask.lease), ask.wait,
      [reply, acks = std::move(acks)](Result<std::vector<JobRecord>> jobs) {
        // On the dispatcher's thread: render elsewhere.
        reply.Later([jobs = std::move(jobs), acks](HttpResponse& res) {
          if (!jobs.ok() && !acks) return RenderError(res, jobs.error());
          std::string body = "{\"jobs\":[";
          if (jobs.ok()) {
            for (const JobRecord& j : jobs.value()) {
              if (&j != &jobs.value().front()) body += ',';
              body += LeasedJobJson(j);
            }
          }
          body += ']';
          if (acks) {
            body += ",\"acks\":";
            body += AckResultsJson(acks->ids, acks->results)
                        .dump(-1, ' ', false, json::error_handler_t::replace);
          }
          body += '}';
          res.status = 200;
          res.set_content(std::move(body), "application/json");
        });
      },
      [reply] { return reply.PeerGone(); });
}

// The acks first (one transaction), then the long-poll as without them. Should the
// acks' transaction fail, nothing is leased: the request answers that error (503).
void Lease(App& app, const HttpRequest& req, Reply reply) {
  Principal who;
  auto ask = ReadLease(app, req, who);
  if (!ask.ok()) return reply.Send(ErrorResponse(ask.error()));
  if (!ask.value().acks) return ParkLease(app, std::move(ask.value()), reply, nullptr);
  std::vector<AckItem> acks = std::move(*ask.value().acks);
  auto lease = std::make_shared<LeaseAsk>(std::move(ask.value()));
  auto ids = std::make_shared<std::vector<std::string>>(AckIds(acks));
  ApplyAcks(app, who, std::move(acks), [&app, reply, lease, ids](Result<AckResults> r) {
    if (!r.ok()) {
      return reply.Later([e = r.error()](HttpResponse& res) { RenderError(res, e); });
    }
    auto carried =
        std::make_shared<const CarriedAcks>(CarriedAcks{std::move(*ids), std::move(r.value())});
    ParkLease(app, std::move(*lease), reply, std::move(carried));
  });
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
  router.AddAsync("POST", "/v1/acks",
                  [&app](const HttpRequest& req, Reply reply) { Acks(app, req, reply); });
  router.AddAsync("POST", "/v1/jobs/{}/complete",
                  [&app](const HttpRequest& req, Reply reply) { Complete(app, req, reply); });
  router.AddAsync("POST", "/v1/jobs/{}/heartbeat",
                  [&app](const HttpRequest& req, Reply reply) { Heartbeat(app, req, reply); });
  router.AddAsync("POST", "/v1/jobs/{}/fail",
                  [&app](const HttpRequest& req, Reply reply) { Fail(app, req, reply); });
}

}  // namespace sluice
