// Admin API: queues (policy, stats, tenants, pause/resume) and tokens.
#include <nlohmann/json.hpp>

#include "common/names.h"
#include "common/time.h"
#include "server/admin_page.h"
#include "server/app.h"
#include "server/errors.h"
#include "server/http.h"
#include "server/log.h"
#include "server/openapi.h"
#include "server/request_readers.h"

namespace sluice {
namespace {

using nlohmann::json;

// A queue as the admin API shows it: stored totals plus rejections since start.
json QueueJson(App& app, const QueueInfo& q) {
  json j = QueueToJson(q);
  j["totals"]["rejected"] = app.metrics.Rejections(q.name);
  return j;
}

void PutQueue(App& app, const HttpRequest& req, HttpResponse& res) {
  auto who = app.auth.Require(req, Scope::kAdmin);
  if (!who.ok()) return RenderError(res, who.error());
  const std::string name = req.matches[1];
  if (Status st = CheckName(NameKind::kQueue, name); !st.ok()) return RenderError(res, st.error());
  auto body = ParseJsonObject(req);
  if (!body.ok()) return RenderError(res, body.error());
  auto policy = ReadPolicy(body.value());
  if (!policy.ok()) return RenderError(res, policy.error());
  auto q = app.store.PutQueue(name, policy.value(), app.clock.Now());
  if (!q.ok()) return RenderError(res, q.error());
  app.dispatcher.Notify();
  LogEvent(spdlog::level::info, "policy_changed",
           {{"request_id", req.request_id},
            {"token_id", who.value().token_id},
            {"queue", name},
            {"policy_version", q.value().version},
            {"algorithm", "gcra"},
            {"policy", PolicyToJson(q.value().policy)}});
  RenderJson(res, 200, QueueJson(app, q.value()));
}

void GetQueue(App& app, const HttpRequest& req, HttpResponse& res) {
  auto who = app.auth.RequireReader(req);
  if (!who.ok()) return RenderError(res, who.error());
  if (Status st = CheckName(NameKind::kQueue, req.matches[1]); !st.ok()) {
    return RenderError(res, st.error());
  }
  auto q = app.store.GetQueue(req.matches[1]);
  if (!q.ok()) return RenderError(res, q.error());
  RenderJson(res, 200, QueueJson(app, q.value()));
}

void ListQueues(App& app, const HttpRequest& req, HttpResponse& res) {
  auto who = app.auth.RequireReader(req);
  if (!who.ok()) return RenderError(res, who.error());
  auto qs = app.store.ListQueues();
  if (!qs.ok()) return RenderError(res, qs.error());
  json out = json::array();
  for (const QueueInfo& q : qs.value()) out.push_back(QueueJson(app, q));
  RenderJson(res, 200, {{"queues", out}, {"waiting_leases", app.dispatcher.waiting()}});
}

void ListTenants(App& app, const HttpRequest& req, HttpResponse& res) {
  auto who = app.auth.RequireReader(req);
  if (!who.ok()) return RenderError(res, who.error());
  if (Status st = CheckName(NameKind::kQueue, req.matches[1]); !st.ok()) {
    return RenderError(res, st.error());
  }
  auto buckets = app.store.ListBuckets(req.matches[1]);
  if (!buckets.ok()) return RenderError(res, buckets.error());
  const Micros now = app.clock.Now();
  json out = json::array();
  for (const BucketInfo& b : buckets.value()) {
    out.push_back(
        {{"tenant", b.tenant},
         {"queued", b.queued},
         {"queued_cost", b.queued_cost},
         {"leased", b.leased},
         {"next_release_at",
          b.next_release_at ? json(FormatRfc3339(std::max(now, *b.next_release_at))) : json()},
         {"oldest_queued_age_ms",
          b.oldest_queued_at ? json((now - *b.oldest_queued_at) / kMicrosPerMilli) : json()},
         {"rate", RateFromMilli(b.policy.rate_milli)},
         {"capacity", b.policy.capacity},
         {"burst", b.policy.burst},
         {"max_inflight_per_tenant", b.policy.max_inflight_per_tenant},
         {"totals", TotalsToJson(b.totals)}});
  }
  RenderJson(res, 200, {{"queue", std::string(req.matches[1])}, {"tenants", out}});
}

void SetPaused(App& app, const HttpRequest& req, HttpResponse& res, bool paused) {
  auto who = app.auth.Require(req, Scope::kAdmin);
  if (!who.ok()) return RenderError(res, who.error());
  if (Status st = CheckName(NameKind::kQueue, req.matches[1]); !st.ok()) {
    return RenderError(res, st.error());
  }
  auto st = app.store.SetPaused(req.matches[1], paused, app.clock.Now());
  if (!st.ok()) return RenderError(res, st.error());
  app.dispatcher.Notify();
  auto q = app.store.GetQueue(req.matches[1]);
  if (!q.ok()) return RenderError(res, q.error());
  RenderJson(res, 200, QueueJson(app, q.value()));
}

void CreateToken(App& app, const HttpRequest& req, HttpResponse& res) {
  auto who = app.auth.Require(req, Scope::kAdmin);
  if (!who.ok()) return RenderError(res, who.error());
  auto body = ParseJsonObject(req);
  if (!body.ok()) return RenderError(res, body.error());
  auto read = ReadTokenRequest(body.value());
  if (!read.ok()) return RenderError(res, read.error());
  TokenRecord rec = std::move(read.value());
  MintedToken minted = MintToken();
  rec.id = minted.id;
  rec.secret_hash = minted.secret_hash;
  rec.created_at = app.clock.Now();
  auto st = app.store.CreateToken(rec);
  if (!st.ok()) return RenderError(res, st.error());
  json scope_names = json::array();
  for (Scope s : rec.scopes) scope_names.push_back(ScopeName(s));
  json out = {{"id", rec.id},
              {"token", minted.plaintext},
              {"tenant", rec.tenant ? json(*rec.tenant) : json()},
              {"scopes", scope_names},
              {"queues", rec.queues ? json(*rec.queues) : json()}};
  RenderJson(res, 201, out);
}

// POST /v1/admin/queues/{q}:simulate: the live backlog under the current and a
// proposed policy, side by side; nothing changes.
void Simulate(App& app, const HttpRequest& req, HttpResponse& res) {
  auto who = app.auth.Require(req, Scope::kAdmin);
  if (!who.ok()) return RenderError(res, who.error());
  if (Status st = CheckName(NameKind::kQueue, req.matches[1]); !st.ok()) {
    return RenderError(res, st.error());
  }
  auto body = ParseJsonObject(req);
  if (!body.ok()) return RenderError(res, body.error());
  auto proposed = ReadPolicy(body.value());
  if (!proposed.ok()) return RenderError(res, proposed.error());
  auto current = app.store.GetQueue(req.matches[1]);
  if (!current.ok()) return RenderError(res, current.error());
  auto backlog = app.store.Backlog(req.matches[1]);
  if (!backlog.ok()) return RenderError(res, backlog.error());
  const Micros now = app.clock.Now();
  auto before = ProjectDrain(current.value().policy, backlog.value(), now);
  auto after = ProjectDrain(proposed.value(), backlog.value(), now);
  auto side = [&](const DrainProjection& d, const BucketPolicy& p) {
    return json{{"drain_seconds", static_cast<double>(d.last_release - now) / kMicrosPerSecond},
                {"drained_at", FormatRfc3339(d.last_release)},
                {"missed_deadlines", d.missed_deadlines},
                {"rate", RateFromMilli(p.rate_milli)},
                {"capacity", p.capacity}};
  };
  json tenants = json::array();
  int64_t missed_before = 0, missed_after = 0;
  double drain_before = 0, drain_after = 0;
  for (size_t i = 0; i < before.size(); ++i) {
    const std::string& t = before[i].tenant;
    json cur = side(before[i], current.value().policy.ForTenant(t));
    json pro = side(after[i], proposed.value().ForTenant(t));
    missed_before += before[i].missed_deadlines;
    missed_after += after[i].missed_deadlines;
    drain_before = std::max(drain_before, cur["drain_seconds"].get<double>());
    drain_after = std::max(drain_after, pro["drain_seconds"].get<double>());
    if (before[i].jobs == 0) continue;
    tenants.push_back({{"tenant", t},
                       {"queued", before[i].jobs},
                       {"queued_cost", before[i].cost},
                       {"current", cur},
                       {"proposed", pro}});
  }
  RenderJson(res, 200,
             {{"queue", std::string(req.matches[1])},
              {"at", FormatRfc3339(now)},
              {"assumes", "workers keep up; caps and not_before are not modelled"},
              {"current", {{"drain_seconds", drain_before}, {"missed_deadlines", missed_before}}},
              {"proposed",
               {{"drain_seconds", drain_after},
                {"missed_deadlines", missed_after},
                {"policy", PolicyToJson(proposed.value())}}},
              {"tenants", tenants}});
}

void DeleteQueue(App& app, const HttpRequest& req, HttpResponse& res) {
  auto who = app.auth.Require(req, Scope::kAdmin);
  if (!who.ok()) return RenderError(res, who.error());
  const std::string name = req.matches[1];
  if (Status valid = CheckName(NameKind::kQueue, name); !valid.ok()) {
    return RenderError(res, valid.error());
  }
  auto st = app.store.DeleteQueue(name);
  if (!st.ok()) return RenderError(res, st.error());
  LogEvent(spdlog::level::info, "queue_deleted",
           {{"request_id", req.request_id}, {"token_id", who.value().token_id}, {"queue", name}});
  RenderJson(res, 200, {{"name", name}, {"deleted", true}});
}

void ListTokens(App& app, const HttpRequest& req, HttpResponse& res) {
  auto who = app.auth.Require(req, Scope::kAdmin);
  if (!who.ok()) return RenderError(res, who.error());
  auto tokens = app.store.ListTokens();
  if (!tokens.ok()) return RenderError(res, tokens.error());
  json out = json::array();
  for (const TokenRecord& t : tokens.value()) out.push_back(TokenToJson(t));
  RenderJson(res, 200, {{"tokens", out}});
}

void RevokeToken(App& app, const HttpRequest& req, HttpResponse& res) {
  auto who = app.auth.Require(req, Scope::kAdmin);
  if (!who.ok()) return RenderError(res, who.error());
  if (Status st = CheckTokenIdInPath(req.matches[1]); !st.ok()) return RenderError(res, st.error());
  auto t = app.store.RevokeToken(req.matches[1], app.clock.Now());
  if (!t.ok()) return RenderError(res, t.error());
  LogEvent(spdlog::level::info, "token_revoked",
           {{"request_id", req.request_id},
            {"token_id", who.value().token_id},
            {"revoked_token_id", t.value().id}});
  RenderJson(res, 200,
             {{"id", t.value().id}, {"revoked_at", FormatRfc3339(*t.value().revoked_at)}});
}

// Prometheus scrape: the admin or a read-only metrics token (tenant names are in the
// labels, so it is not public).
void ScrapeMetrics(App& app, const HttpRequest& req, HttpResponse& res) {
  auto who = app.auth.RequireReader(req);
  if (!who.ok()) return RenderError(res, who.error());
  auto qs = app.store.ListQueues();
  if (!qs.ok()) return RenderError(res, qs.error());
  std::vector<Metrics::QueueState> states;
  for (const QueueInfo& q : qs.value()) {
    auto buckets = app.store.ListBuckets(q.name);
    if (!buckets.ok()) return RenderError(res, buckets.error());
    states.push_back({q, std::move(buckets.value())});
  }
  std::optional<LimitStats> limits;
  if (auto stats = app.store.GetLimitStats(app.clock.Now()); stats.ok()) limits = stats.value();
  res.status = 200;
  res.set_content(
      app.metrics.Render(states, app.dispatcher.waiting(), app.store.MaintenanceLeader(), limits),
      "text/plain; version=0.0.4; charset=utf-8");
}

void RetryJob(App& app, const HttpRequest& req, HttpResponse& res) {
  auto who = app.auth.Require(req, Scope::kAdmin);
  if (!who.ok()) return RenderError(res, who.error());
  if (Status st = CheckJobIdInPath(req.matches[1]); !st.ok()) return RenderError(res, st.error());
  auto job = app.store.Retry(req.matches[1], app.clock.Now());
  if (!job.ok()) return RenderError(res, job.error());
  app.dispatcher.Notify();
  RenderJob(res, 200, job.value());
}

}  // namespace

void RegisterAdminRoutes(Router& router, App& app) {
  using Req = const HttpRequest&;
  using Res = HttpResponse&;
  router.Add("GET", "/v1/admin/queues", [&app](Req req, Res res) { ListQueues(app, req, res); });
  router.Add("PUT", "/v1/admin/queues/{}", [&app](Req req, Res res) { PutQueue(app, req, res); });
  router.Add("GET", "/v1/admin/queues/{}", [&app](Req req, Res res) { GetQueue(app, req, res); });
  router.Add("POST", "/v1/admin/queues/{}:simulate",
             [&app](Req req, Res res) { Simulate(app, req, res); });
  router.Add("DELETE", "/v1/admin/queues/{}",
             [&app](Req req, Res res) { DeleteQueue(app, req, res); });
  router.Add("GET", "/v1/admin/queues/{}/tenants",
             [&app](Req req, Res res) { ListTenants(app, req, res); });
  router.Add("POST", "/v1/admin/queues/{}/pause",
             [&app](Req req, Res res) { SetPaused(app, req, res, true); });
  router.Add("POST", "/v1/admin/queues/{}/resume",
             [&app](Req req, Res res) { SetPaused(app, req, res, false); });
  router.Add("POST", "/v1/admin/tokens", [&app](Req req, Res res) { CreateToken(app, req, res); });
  router.Add("GET", "/v1/admin/tokens", [&app](Req req, Res res) { ListTokens(app, req, res); });
  router.Add("DELETE", "/v1/admin/tokens/{}",
             [&app](Req req, Res res) { RevokeToken(app, req, res); });
  router.Add("GET", "/metrics", [&app](Req req, Res res) { ScrapeMetrics(app, req, res); });
  router.Add("POST", "/v1/admin/jobs/{}/retry",
             [&app](Req req, Res res) { RetryJob(app, req, res); });
}

void RegisterHealthRoutes(Router& router, App& app) {
  router.Add("GET", "/healthz", [](const HttpRequest&, HttpResponse& res) {
    RenderJson(res, 200, {{"status", "ok"}});
  });
  router.Add("GET", "/readyz", [&app](const HttpRequest&, HttpResponse& res) {
    // Ready means a write can be made durable now (fail closed: 503 otherwise).
    auto probe = app.store.Probe(app.clock.Now());
    if (!probe.ok()) return RenderError(res, probe.error());
    RenderJson(res, 200, {{"status", "ready"}});
  });
}

void RegisterRoutes(Router& router, App& app) {
  RegisterHealthRoutes(router, app);
  RegisterJobRoutes(router, app);
  RegisterLeaseRoutes(router, app);
  RegisterAdminRoutes(router, app);
  RegisterLimitRoutes(router, app);
  RegisterAdminPageRoutes(router);
  RegisterOpenApiRoutes(router);
}

}  // namespace sluice
