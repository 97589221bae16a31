#include "cli/commands.h"

#include <chrono>
#include <random>
#include <thread>

#include "cli/table.h"
#include "cli/views.h"
#include "common/encoding.h"
#include "common/random.h"
#include "worker/backoff.h"

namespace sluice::cli {

using nlohmann::json;

namespace {

std::string PrettyJson(const json& j) {
  return j.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

std::string QueuePath(const std::string& queue) {
  return "/v1/admin/queues/" + PercentEncode(queue);
}

}  // namespace

template <typename View>
int Commands::Print(const ApiResult& r, View view) {
  if (!r.ok()) return Report(r.failure());
  o_.out << (o_.json ? PrettyJson(r.value().body) : view(r.value().body));
  return kExitOk;
}

int Commands::Report(const ApiFailure& f) {
  switch (f.kind) {
    case ApiFailure::Kind::kUnreachable:
      o_.err << "sluice: " << f.problem.detail << "\n";
      return kExitUnreachable;
    case ApiFailure::Kind::kBadAnswer:
      o_.err << "sluice: " << f.problem.detail << "\n";
      return kExitRefused;
    case ApiFailure::Kind::kRefused:
      break;
  }
  const Problem& p = f.problem;
  o_.err << "sluice: " << CleanCell(p.code.empty() ? "error" : p.code) << " (HTTP " << p.status
         << ")";
  if (!p.detail.empty()) o_.err << ": " << CleanCell(p.detail);
  o_.err << "\n";
  if (p.retry_after_s) o_.err << "Retry-After: " << *p.retry_after_s << " s\n";
  if (!p.estimated_start.empty()) {
    o_.err << "estimated_start: " << CleanCell(p.estimated_start) << "\n";
  }
  if (p.status == 401) o_.err << "sluice: check --token or SLUICE_TOKEN\n";
  return kExitRefused;
}

int Commands::Queues() { return Print(api_.Get("/v1/admin/queues"), QueuesView); }

int Commands::Tenants(const std::string& queue) {
  return Print(api_.Get(QueuePath(queue) + "/tenants"), TenantsView);
}

int Commands::Jobs(const JobsQuery& query) {
  httplib::Params params;
  if (query.queue) params.emplace("queue", *query.queue);
  if (query.state) params.emplace("state", *query.state);
  if (query.limit) params.emplace("limit", std::to_string(*query.limit));
  std::optional<std::string> cursor = query.cursor;
  json jobs = json::array();
  json last_page;
  for (;;) {
    httplib::Params page_params = params;
    if (cursor) page_params.emplace("cursor", *cursor);
    ApiResult r = api_.Get("/v1/jobs", page_params);
    if (!r.ok()) return Report(r.failure());
    last_page = r.value().body;
    if (last_page.is_object() && last_page.contains("jobs") && last_page["jobs"].is_array()) {
      for (const json& j : last_page["jobs"]) jobs.push_back(j);
    }
    std::optional<std::string> next;
    if (last_page.is_object() && last_page.contains("next_cursor") &&
        last_page["next_cursor"].is_string()) {
      next = last_page["next_cursor"].get<std::string>();
    }
    // A cursor that does not move would loop forever: stop there.
    if (!query.all || !next || next == cursor) {
      cursor = next;
      break;
    }
    cursor = next;
  }
  if (o_.json) {
    // One page: the server's answer as it is. --all: every job, and no further cursor.
    o_.out << PrettyJson(query.all ? json{{"jobs", jobs}, {"next_cursor", nullptr}} : last_page);
    return kExitOk;
  }
  o_.out << JobsView(jobs);
  if (!query.all && cursor) {
    o_.err << "more jobs: add --all, or --cursor " << CleanCell(*cursor) << "\n";
  }
  return kExitOk;
}

int Commands::Job(const std::string& id) {
  return Print(api_.Get("/v1/jobs/" + PercentEncode(id)), JobView);
}

int Commands::SetPaused(const std::string& queue, bool paused) {
  return Print(api_.Post(QueuePath(queue) + (paused ? "/pause" : "/resume"), json::object()),
               PausedView);
}

int Commands::CreateToken(const TokenSpec& spec) {
  json body = {{"scopes", spec.scopes}};
  if (spec.tenant) body["tenant"] = *spec.tenant;
  if (!spec.queues.empty()) body["queues"] = spec.queues;
  ApiResult r = api_.Post("/v1/admin/tokens", body);
  if (!r.ok()) return Report(r.failure());
  const json& answer = r.value().body;
  if (spec.secret_only) {
    o_.out << Field(answer, "token") << "\n";
  } else {
    o_.out << (o_.json ? PrettyJson(answer) : CreatedTokenView(answer));
  }
  o_.err << "the token is shown only this once: store it now\n";
  return kExitOk;
}

int Commands::ListTokens() { return Print(api_.Get("/v1/admin/tokens"), TokensView); }

int Commands::RevokeToken(const std::string& id) {
  return Print(api_.Delete("/v1/admin/tokens/" + PercentEncode(id)), RevokedView);
}

int Commands::Submit(const SubmitSpec& spec) {
  json body = json::object();
  if (spec.payload) body["payload"] = *spec.payload;
  if (spec.cost) body["cost"] = *spec.cost;
  if (spec.deadline_in_ms) body["deadline_in_ms"] = *spec.deadline_in_ms;
  httplib::Headers headers;
  std::optional<std::string> key = spec.idempotency_key;
  if (!key && spec.retries > 0) key = RandomId("cli_", 16);
  if (key) headers.emplace("Idempotency-Key", *key);
  const std::string path = "/v1/queues/" + PercentEncode(spec.queue) + "/jobs";
  std::mt19937_64 rng(std::random_device{}());
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  for (int failures = 0;; ++failures) {
    ApiResult r = api_.Post(path, body, headers);
    if (r.ok()) {
      bool replayed = r.value().header("Idempotent-Replayed") == "true";
      o_.out << (o_.json ? PrettyJson(r.value().body) : SubmittedView(r.value().body, replayed));
      return kExitOk;
    }
    const ApiFailure& f = r.failure();
    if (failures >= spec.retries || !IsTransient(ToError(f))) return Report(f);
    const int64_t delay_ms =
        RetryDelayMs(BackoffPolicy{}, failures + 1, f.problem.retry_after_s, unit(rng));
    if (delay_ms > spec.max_wait_s * 1000) {
      o_.err << "sluice: the server asks to wait " << (delay_ms + 999) / 1000
             << " s, more than --max-wait-s " << spec.max_wait_s << "\n";
      return Report(f);
    }
    o_.err << "sluice: " << CleanCell(f.problem.code.empty() ? "no answer" : f.problem.code);
    if (f.problem.status) o_.err << " (HTTP " << f.problem.status << ")";
    o_.err << "; retrying in " << delay_ms << " ms (" << failures + 1 << " of " << spec.retries
           << ")\n";
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));  // a time, not an event
  }
}

}  // namespace sluice::cli
