// Intake and job reads: POST /v1/queues/{queue}/jobs, GET /v1/jobs/{id}.
#include <nlohmann/json.hpp>

#include "server/app.h"
#include "server/errors.h"
#include "server/http.h"
#include "shaper/admission.h"

namespace sluice {
namespace {

using nlohmann::json;

constexpr int64_t kMaxMs = 365LL * 24 * 3600 * 1000;

// Body → NewJob (without queue and tenant).
Result<NewJob> ParseNewJob(const json& body, Micros now) {
  NewJob job;
  if (auto it = body.find("payload"); it != body.end()) job.payload = it->dump();
  auto cost = IntField(body, "cost", 1, 1'000'000'000);
  if (!cost.ok()) return cost.error();
  job.cost = cost.value().value_or(1);

  auto deadline = TimeField(body, "deadline");
  if (!deadline.ok()) return deadline.error();
  auto deadline_in = IntField(body, "deadline_in_ms", 0, kMaxMs);
  if (!deadline_in.ok()) return deadline_in.error();
  if (deadline.value() && deadline_in.value()) {
    return MakeError(ErrorCode::kBadRequest, "give 'deadline' or 'deadline_in_ms', not both");
  }
  job.deadline = deadline.value();
  if (deadline_in.value()) job.deadline = now + *deadline_in.value() * kMicrosPerMilli;

  auto not_before = TimeField(body, "not_before");
  if (!not_before.ok()) return not_before.error();
  job.not_before = not_before.value();

  auto lease_ms = IntField(body, "lease_ms", 100, kMaxMs);
  if (!lease_ms.ok()) return lease_ms.error();
  job.lease_ms = lease_ms.value();
  auto max_attempts = IntField(body, "max_attempts", 1, 1000);
  if (!max_attempts.ok()) return max_attempts.error();
  job.max_attempts = max_attempts.value();

  for (auto& [key, value] : body.items()) {
    (void)value;
    static const char* kKnown[] = {"payload",    "cost",     "deadline",    "deadline_in_ms",
                                   "not_before", "lease_ms", "max_attempts"};
    bool known = false;
    for (const char* k : kKnown) known = known || key == k;
    if (!known) return MakeError(ErrorCode::kBadRequest, "unknown field '" + key + "'");
  }
  return job;
}

// RateLimit-Policy and RateLimit (draft-ietf-httpapi-ratelimit-headers-11).
void SetRateLimitHeaders(httplib::Response& res, const std::string& queue,
                         const BucketPolicy& policy, const AdmissionDecision& d) {
  res.set_header("RateLimit-Policy", "\"" + queue + "\";q=" + std::to_string(policy.capacity) +
                                         ";w=" + std::to_string(DrainWindowSeconds(policy)));
  res.set_header("RateLimit", "\"" + queue + "\";r=" + std::to_string(d.remaining) +
                                  ";t=" + std::to_string(d.reset_s));
}

void Submit(App& app, const httplib::Request& req, httplib::Response& res) {
  auto who = app.auth.Require(req, Scope::kSubmit);
  if (!who.ok()) return RenderError(res, who.error());
  if (!who.value().tenant) {
    return RenderError(res, MakeError(ErrorCode::kForbidden, "this token is bound to no tenant"));
  }
  const std::string queue = req.matches[1];
  auto body = ParseJsonObject(req);
  if (!body.ok()) return RenderError(res, body.error());
  const Micros now = app.clock.Now();
  auto job = ParseNewJob(body.value(), now);
  if (!job.ok()) return RenderError(res, job.error());
  job.value().queue = queue;
  job.value().tenant = *who.value().tenant;

  auto out = app.store.Submit(job.value(), now);
  if (!out.ok()) return RenderError(res, out.error());
  const SubmitOutcome& o = out.value();
  SetRateLimitHeaders(res, queue, o.policy, o.decision);
  switch (o.decision.outcome) {
    case AdmissionOutcome::kAdmitted:
      app.dispatcher.Notify();
      res.set_header("Location", "/v1/jobs/" + o.job->id);
      return RenderJson(res, 202, JobToJson(*o.job));
    case AdmissionOutcome::kQueueFull: {
      Error e = MakeError(ErrorCode::kQueueFull,
                          "the backlog of queue '" + queue + "' for this tenant is full");
      e.retry_after_s = o.decision.retry_after_s;
      return RenderError(res, e);
    }
    case AdmissionOutcome::kDeadlineUnreachable: {
      Error e = MakeError(ErrorCode::kDeadlineUnreachable,
                          "the job would start at " + FormatRfc3339(o.decision.estimated_start) +
                              ", after its deadline");
      RenderError(res, e);
      json b = json::parse(res.body);
      b["estimated_start"] = FormatRfc3339(o.decision.estimated_start);
      res.set_content(b.dump(), "application/problem+json");
      return;
    }
    case AdmissionOutcome::kCostOverCapacity:
      return RenderError(
          res, MakeError(ErrorCode::kCostExceedsCapacity,
                         "cost " + std::to_string(job.value().cost) +
                             " exceeds the bucket capacity " + std::to_string(o.policy.capacity)));
  }
}

void GetJob(App& app, const httplib::Request& req, httplib::Response& res) {
  auto who = app.auth.Authenticate(req);
  if (!who.ok()) return RenderError(res, who.error());
  const Principal& p = who.value();
  if (!p.Has(Scope::kAdmin) && !p.Has(Scope::kSubmit)) {
    return RenderError(res, MakeError(ErrorCode::kForbidden, "this token cannot read jobs"));
  }
  auto job = app.store.GetJob(req.matches[1]);
  if (!job.ok()) return RenderError(res, job.error());
  // Someone else's job is indistinguishable from a missing one.
  if (!p.Has(Scope::kAdmin) && p.tenant != job.value().tenant) {
    return RenderError(res, MakeError(ErrorCode::kNotFound,
                                      "job '" + std::string(req.matches[1]) + "' does not exist"));
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

}  // namespace

void RegisterJobRoutes(httplib::Server& server, App& app) {
  server.Post(
      R"(/v1/queues/([^/:]+)/jobs)",
      [&app](const httplib::Request& req, httplib::Response& res) { Submit(app, req, res); });
  server.Get(R"(/v1/jobs/([^/]+))", [&app](const httplib::Request& req, httplib::Response& res) {
    GetJob(app, req, res);
  });
}

}  // namespace sluice
