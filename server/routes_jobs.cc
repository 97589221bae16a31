// Intake and job reads: POST /v1/queues/{queue}/jobs and jobs:batch, GET /v1/jobs/{id},
// GET /v1/jobs, DELETE /v1/jobs/{id}.
#include <nlohmann/json.hpp>

#include "common/crypto.h"
#include "common/names.h"
#include "common/utf8.h"
#include "server/app.h"
#include "server/errors.h"
#include "server/http.h"
#include "server/log.h"
#include "server/request_readers.h"
#include "shaper/admission.h"

namespace sluice {
namespace {

using nlohmann::json;

// RateLimit-Policy and RateLimit (draft-ietf-httpapi-ratelimit-headers-11).
void SetRateLimitHeaders(HttpResponse& res, const std::string& queue, const BucketPolicy& policy,
                         const AdmissionDecision& d) {
  res.set_header("RateLimit-Policy", "\"" + queue + "\";q=" + std::to_string(policy.capacity) +
                                         ";w=" + std::to_string(DrainWindowSeconds(policy)));
  res.set_header("RateLimit", "\"" + queue + "\";r=" + std::to_string(d.remaining) +
                                  ";t=" + std::to_string(d.reset_s));
}

// The submit scope and a tenant, and a well-formed queue name in the path.
Status CheckSubmitter(const HttpRequest& req, const Principal& who) {
  if (!who.Has(Scope::kSubmit)) {
    return MakeError(ErrorCode::kForbidden, "this token lacks the 'submit' scope");
  }
  if (!who.tenant) return MakeError(ErrorCode::kForbidden, "this token is bound to no tenant");
  return CheckName(NameKind::kQueue, req.matches[1]);
}

// The route's part of a job: its queue, the caller's tenant, the request's W3C trace
// context when well formed (ignored otherwise, as the spec says).
void PlaceJob(const HttpRequest& req, const Principal& who, NewJob& job) {
  job.queue = req.matches[1];
  job.tenant = *who.tenant;
  if (std::string tp = req.get_header_value("traceparent"); ValidTraceparent(tp)) {
    job.traceparent = tp;
  }
}

// Reads a submit request of an authenticated caller into the job to admit: the
// submit scope and a tenant, a queue name, a body, an Idempotency-Key if any.
Result<NewJob> ReadSubmit(const HttpRequest& req, const Principal& who) {
  if (Status st = CheckSubmitter(req, who); !st.ok()) return st.error();
  auto body = ParseJsonObject(req);
  if (!body.ok()) return body.error();
  auto job = ReadNewJob(body.value());
  if (!job.ok()) return job.error();
  PlaceJob(req, who, job.value());
  if (req.has_header("Idempotency-Key")) {
    std::string key = req.get_header_value("Idempotency-Key");
    if (Status st = CheckName(NameKind::kIdempotencyKey, key); !st.ok()) return st.error();
    job.value().idempotency_key = key;
    job.value().body_hash = Sha256Hex(req.body);
  }
  return job;
}

// Reads a batch submit of an authenticated caller into the jobs to admit.
Result<std::vector<NewJob>> ReadSubmitBatch(const HttpRequest& req, const Principal& who) {
  if (Status st = CheckSubmitter(req, who); !st.ok()) return st.error();
  auto body = ParseJsonObject(req);
  if (!body.ok()) return body.error();
  auto jobs = ReadBatchJobs(body.value());
  if (!jobs.ok()) return jobs.error();
  for (NewJob& job : jobs.value()) PlaceJob(req, who, job);
  return jobs;
}

// Logs and counts a refused submit (DESIGN.md: one line per rejection).
void Rejected(App& app, const HttpRequest& req, const std::string& path_queue,
              const std::string& tenant, const Error& e, const SubmitOutcome* o) {
  // The queue comes from the path and may be anything (even ill-formed UTF-8).
  const std::string queue = SanitizeUtf8(path_queue);
  app.metrics.CountRejection(queue, tenant, ErrorCodeName(e.code));
  const std::string token = BearerToken(req);
  json fields = {{"request_id", req.request_id},
                 {"token", token.empty() ? "none" : TokenDigest(token)},
                 {"queue", queue},
                 {"tenant", tenant},
                 {"decision", "reject"},
                 {"reason", ErrorCodeName(e.code)},
                 {"algorithm", "gcra"}};
  if (o) {
    fields["policy_version"] = o->policy_version;
    fields["remaining"] = o->decision.remaining;
  }
  if (e.retry_after_s) fields["retry_after_s"] = *e.retry_after_s;
  LogEvent(spdlog::level::info, "rejected", fields);
}

// What a decision that did not admit answers: the error, and the problem's extra
// fields (a deadline_unreachable names the estimated start).
struct Refusal {
  Error error;
  json extra = json::object();
};

std::optional<Refusal> RefusalOf(const std::string& queue, int64_t cost, const SubmitOutcome& o) {
  switch (o.decision.outcome) {
    case AdmissionOutcome::kAdmitted:
      return std::nullopt;
    case AdmissionOutcome::kQueueFull: {
      Error e = MakeError(ErrorCode::kQueueFull,
                          "the backlog of queue '" + queue + "' for this tenant is full");
      e.retry_after_s = o.decision.retry_after_s;
      return Refusal{e};
    }
    case AdmissionOutcome::kDeadlineUnreachable: {
      Error e = MakeError(ErrorCode::kDeadlineUnreachable,
                          "the job would start at " + FormatRfc3339(o.decision.estimated_start) +
                              ", not before its deadline " + FormatRfc3339(o.decision.deadline));
      // When a job with the same relative deadline would fit (docs/shaping.md).
      e.retry_after_s = o.decision.retry_after_s;
      return Refusal{e, {{"estimated_start", FormatRfc3339(o.decision.estimated_start)}}};
    }
    case AdmissionOutcome::kDeadlinePassed:
      return Refusal{MakeError(ErrorCode::kDeadlineInvalid,
                               "the job's deadline " + FormatRfc3339(o.decision.deadline) +
                                   " is not in the future: it could only expire")};
    case AdmissionOutcome::kNotBeforeAfterDeadline:
      return Refusal{MakeError(ErrorCode::kDeadlineInvalid,
                               "'not_before' is not before the job's deadline " +
                                   FormatRfc3339(o.decision.deadline) +
                                   " (its own, or the queue's default_deadline_ms from now): it "
                                   "could only expire")};
    case AdmissionOutcome::kCostOverCapacity:
      return Refusal{MakeError(ErrorCode::kCostExceedsCapacity,
                               "cost " + std::to_string(cost) + " exceeds the bucket capacity " +
                                   std::to_string(o.policy.capacity))};
  }
  return std::nullopt;
}

// The answer to a submit, once the store has decided (and committed).
void RenderSubmit(App& app, const HttpRequest& req, const std::string& queue,
                  const std::string& tenant, int64_t cost, const Result<SubmitOutcome>& out,
                  HttpResponse& res) {
  if (!out.ok()) return RenderError(res, out.error());
  const SubmitOutcome& o = out.value();
  SetRateLimitHeaders(res, queue, o.policy, o.decision);
  if (auto refusal = RefusalOf(queue, cost, o)) {
    Rejected(app, req, queue, tenant, refusal->error, &o);
    RenderError(res, refusal->error);
    if (!refusal->extra.empty()) {
      json b = json::parse(res.body);
      b.update(refusal->extra);
      res.set_content(b.dump(), "application/problem+json");
    }
    return;
  }
  if (o.replayed) {
    res.set_header("Idempotent-Replayed", "true");
  } else {
    app.dispatcher.Notify();
  }
  res.set_header("Location", "/v1/jobs/" + o.job->id);
  RenderJob(res, 202, *o.job);
}

// One item of a batch's answer, as JSON text: BatchAdmittedJson, or the problem's
// {"status", "error", "detail", "retry_after"?, ...} with the bucket's quota after the
// item ("remaining", "reset_s": RateLimit's r and t) when the store decided it.
std::string BatchItemJson(App& app, const HttpRequest& req, const std::string& queue,
                          const std::string& tenant, int64_t cost,
                          const Result<SubmitOutcome>& out) {
  if (!out.ok()) {
    return ProblemItem(out.error()).dump(-1, ' ', false, json::error_handler_t::replace);
  }
  const SubmitOutcome& o = out.value();
  auto refusal = RefusalOf(queue, cost, o);
  if (!refusal) {
    return BatchAdmittedJson(*o.job, o.replayed, o.decision.remaining, o.decision.reset_s);
  }
  Rejected(app, req, queue, tenant, refusal->error, &o);
  json item = ProblemItem(refusal->error);
  item.update(refusal->extra);
  item["remaining"] = o.decision.remaining;
  item["reset_s"] = o.decision.reset_s;
  return item.dump(-1, ' ', false, json::error_handler_t::replace);
}

void Submit(App& app, const HttpRequest& req, Reply reply) {
  const Micros now = app.clock.Now();
  auto who = app.auth.Authenticate(req);
  // Once the token is known, its tenant is named on the rejection line, whatever the
  // rejection (scope, queue name, body).
  const std::string caller_tenant = who.ok() ? who.value().tenant.value_or("") : "";
  auto job = who.ok() ? ReadSubmit(req, who.value()) : Result<NewJob>(who.error());
  if (!job.ok()) {
    Rejected(app, req, req.matches[1], caller_tenant, job.error(), nullptr);
    return reply.Send(ErrorResponse(job.error()));
  }
  const std::string queue = job.value().queue;
  const std::string tenant = job.value().tenant;
  const int64_t cost = job.value().cost;
  // The request stays valid until the reply is sent (router.h).
  app.store.SubmitAsync(
      std::move(job.value()), now,
      [&app, &req, reply, queue, tenant, cost](Result<SubmitOutcome> out) {
        // Where the store's commit delivers it: render on the connection's thread.
        reply.Later([&app, &req, queue, tenant, cost, out = std::move(out)](HttpResponse& res) {
          RenderSubmit(app, req, queue, tenant, cost, out, res);
        });
      });
}

// POST /v1/queues/{queue}/jobs:batch: every job decided in order as if submitted alone,
// in one transaction and one commit; 200 with a result per job, in order.
void SubmitBatch(App& app, const HttpRequest& req, Reply reply) {
  const Micros now = app.clock.Now();
  auto who = app.auth.Authenticate(req);
  const std::string caller_tenant = who.ok() ? who.value().tenant.value_or("") : "";
  auto jobs =
      who.ok() ? ReadSubmitBatch(req, who.value()) : Result<std::vector<NewJob>>(who.error());
  if (!jobs.ok()) {
    Rejected(app, req, req.matches[1], caller_tenant, jobs.error(), nullptr);
    return reply.Send(ErrorResponse(jobs.error()));
  }
  const std::string queue = req.matches[1];
  std::vector<int64_t> costs;
  costs.reserve(jobs.value().size());
  for (const NewJob& j : jobs.value()) costs.push_back(j.cost);
  app.store.SubmitManyAsync(
      std::move(jobs.value()), now,
      [&app, &req, reply, queue, tenant = caller_tenant,
       costs = std::move(costs)](Result<std::vector<Result<SubmitOutcome>>> out) {
        reply.Later([&app, &req, queue, tenant, costs, out = std::move(out)](HttpResponse& res) {
          if (!out.ok()) return RenderError(res, out.error());
          // Every job names the path's queue: an unknown one is the request's 404.
          const Result<SubmitOutcome>& first = out.value().front();
          if (!first.ok() && first.error().code == ErrorCode::kNotFound) {
            return RenderError(res, first.error());
          }
          std::string body = "{\"results\":[";
          body.reserve(160 * out.value().size());
          bool admitted = false;
          const SubmitOutcome* last = nullptr;
          for (size_t i = 0; i < out.value().size(); ++i) {
            const Result<SubmitOutcome>& o = out.value()[i];
            if (i > 0) body += ',';
            body += BatchItemJson(app, req, queue, tenant, costs[i], o);
            if (!o.ok()) continue;
            last = &o.value();
            admitted = admitted || (o.value().job && !o.value().replayed &&
                                    o.value().decision.outcome == AdmissionOutcome::kAdmitted);
          }
          if (last) SetRateLimitHeaders(res, queue, last->policy, last->decision);
          if (admitted) app.dispatcher.Notify();
          body += "]}";
          res.status = 200;
          res.set_content(std::move(body), "application/json");
        });
      });
}

void GetJob(App& app, const HttpRequest& req, HttpResponse& res) {
  auto who = app.auth.Authenticate(req);
  if (!who.ok()) return RenderError(res, who.error());
  const Principal& p = who.value();
  if (!p.Has(Scope::kAdmin) && !p.Has(Scope::kSubmit)) {
    return RenderError(res, MakeError(ErrorCode::kForbidden, "this token cannot read jobs"));
  }
  if (Status st = CheckJobIdInPath(req.matches[1]); !st.ok()) return RenderError(res, st.error());
  auto job = app.store.GetJob(req.matches[1]);
  if (!job.ok()) return RenderError(res, job.error());
  // Someone else's job is indistinguishable from a missing one.
  if (!p.Has(Scope::kAdmin) && p.tenant != job.value().tenant) {
    return RenderError(res,
                       MakeError(ErrorCode::kNotFound,
                                 "job " + QuoteForMessage(req.matches[1]) + " does not exist"));
  }
  json out = JobToJson(job.value());
  out["blocked_by"] = nullptr;
  if (job.value().state == JobState::kQueued) {
    auto why = app.store.ExplainQueued(job.value(), app.clock.Now());
    if (!why.ok()) return RenderError(res, why.error());
    BlockedBy b = why.value().blocked_by;
    if (b == BlockedBy::kNone && !app.dispatcher.HasWaiterFor(job.value().queue)) {
      b = BlockedBy::kNoWorker;
    }
    if (b != BlockedBy::kNone) out["blocked_by"] = BlockedByName(b);
    out["estimated_start"] = FormatRfc3339(why.value().estimated_start);
  }
  RenderJson(res, 200, out);
}

// The job if the caller may see it: own tenant, or admin. Someone else's is 404.
Result<JobRecord> VisibleJob(App& app, const Principal& p, const std::string& id) {
  auto job = app.store.GetJob(id);
  if (!job.ok()) return job;
  if (!p.Has(Scope::kAdmin) && p.tenant != job.value().tenant) {
    return MakeError(ErrorCode::kNotFound, "job " + QuoteForMessage(id) + " does not exist");
  }
  return job;
}

Result<Principal> ReaderOfJobs(App& app, const HttpRequest& req) {
  auto who = app.auth.Authenticate(req);
  if (!who.ok()) return who;
  if (!who.value().Has(Scope::kAdmin) && !who.value().Has(Scope::kSubmit)) {
    return MakeError(ErrorCode::kForbidden, "this token cannot read jobs");
  }
  return who;
}

void CancelJob(App& app, const HttpRequest& req, HttpResponse& res) {
  auto who = ReaderOfJobs(app, req);
  if (!who.ok()) return RenderError(res, who.error());
  if (Status st = CheckJobIdInPath(req.matches[1]); !st.ok()) return RenderError(res, st.error());
  auto job = VisibleJob(app, who.value(), req.matches[1]);
  if (!job.ok()) return RenderError(res, job.error());
  auto canceled = app.store.Cancel(job.value().id, app.clock.Now());
  if (!canceled.ok()) return RenderError(res, canceled.error());
  RenderJob(res, 200, canceled.value());
}

// Cursors are opaque to clients: "c" + the admission sequence in hex.
std::string EncodeCursor(int64_t seq) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "c%llx", static_cast<unsigned long long>(seq));
  return buf;
}

std::optional<int64_t> DecodeCursor(const std::string& c) {
  if (c.size() < 2 || c.size() > 17 || c[0] != 'c') return std::nullopt;
  int64_t v = 0;
  for (size_t i = 1; i < c.size(); ++i) {
    char ch = c[i];
    int d = ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : -1;
    if (d < 0) return std::nullopt;
    v = v * 16 + d;
  }
  return v;
}

void ListJobs(App& app, const HttpRequest& req, HttpResponse& res) {
  auto who = ReaderOfJobs(app, req);
  if (!who.ok()) return RenderError(res, who.error());
  JobFilter f;
  if (!who.value().Has(Scope::kAdmin)) f.tenant = who.value().tenant;
  if (req.has_param("queue")) {
    f.queue = req.get_param_value("queue");
    if (Status st = CheckName(NameKind::kQueue, *f.queue); !st.ok()) {
      return RenderError(res, MakeError(ErrorCode::kBadRequest, "'queue': " + st.error().detail));
    }
  }
  if (req.has_param("state")) {
    f.state = ParseJobState(req.get_param_value("state"));
    if (!f.state) {
      return RenderError(res, MakeError(ErrorCode::kBadRequest,
                                        "'state' must be one of queued, leased, succeeded, "
                                        "failed, expired, canceled"));
    }
  }
  if (req.has_param("limit")) {
    const std::string l = req.get_param_value("limit");
    char* end = nullptr;
    long long v = std::strtoll(l.c_str(), &end, 10);
    if (l.empty() || *end != '\0' || v < 1 || v > 1000) {
      return RenderError(res, MakeError(ErrorCode::kBadRequest, "'limit' must be 1 to 1000"));
    }
    f.limit = v;
  }
  if (req.has_param("cursor")) {
    auto seq = DecodeCursor(req.get_param_value("cursor"));
    if (!seq) return RenderError(res, MakeError(ErrorCode::kBadRequest, "'cursor' is not valid"));
    f.after_seq = *seq;
  }
  auto page = app.store.ListJobs(f);
  if (!page.ok()) return RenderError(res, page.error());
  json jobs = json::array();
  for (const JobRecord& j : page.value().jobs) jobs.push_back(JobToJson(j));
  json out = {{"jobs", jobs}, {"next_cursor", nullptr}};
  if (page.value().next_after_seq) out["next_cursor"] = EncodeCursor(*page.value().next_after_seq);
  RenderJson(res, 200, out);
}

}  // namespace

void RegisterJobRoutes(Router& router, App& app) {
  router.AddAsync("POST", "/v1/queues/{}/jobs",
                  [&app](const HttpRequest& req, Reply reply) { Submit(app, req, reply); });
  router.AddAsync("POST", "/v1/queues/{}/jobs:batch",
                  [&app](const HttpRequest& req, Reply reply) { SubmitBatch(app, req, reply); });
  router.Add("GET", "/v1/jobs/{}",
             [&app](const HttpRequest& req, HttpResponse& res) { GetJob(app, req, res); });
  router.Add("DELETE", "/v1/jobs/{}",
             [&app](const HttpRequest& req, HttpResponse& res) { CancelJob(app, req, res); });
  router.Add("GET", "/v1/jobs",
             [&app](const HttpRequest& req, HttpResponse& res) { ListJobs(app, req, res); });
}

}  // namespace sluice
