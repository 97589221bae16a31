#include "cli/views.h"

#include "cli/format.h"
#include "cli/table.h"

namespace sluice::cli {

using nlohmann::json;

namespace {

constexpr size_t kMaxInlineJson = 200;  // payload/result/errors longer than this are cut

const json& Items(const json& answer, const char* key) {
  static const json kEmpty = json::array();
  if (!answer.is_object()) return kEmpty;
  auto it = answer.find(key);
  return it != answer.end() && it->is_array() ? *it : kEmpty;
}

std::string Dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

// Compact JSON for a detail line, cut to kMaxInlineJson characters (--json has it whole).
std::string InlineJson(const json& j, const char* key) {
  if (!j.is_object() || !j.contains(key) || j[key].is_null()) return "";
  std::string s = j[key].is_string() ? j[key].get<std::string>() : Dump(j[key]);
  if (s.size() > kMaxInlineJson) s = s.substr(0, kMaxInlineJson) + "...";
  return s;
}

std::string DurationField(const json& j, const char* key) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_number()) return "";
  return FormatDurationMs(j[key].get<int64_t>());
}

}  // namespace

std::string Cell(const json& value) {
  switch (value.type()) {
    case json::value_t::null:
    case json::value_t::discarded:
      return "";
    case json::value_t::string:
      return value.get<std::string>();
    case json::value_t::boolean:
      return value.get<bool>() ? "yes" : "no";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
      return Dump(value);
    case json::value_t::number_float:
      return FormatNumber(value.get<double>());
    case json::value_t::array: {
      std::string out;
      for (const json& v : value) out += (out.empty() ? "" : ",") + Cell(v);
      return out;
    }
    default:
      return Dump(value);
  }
}

std::string Field(const json& j, const char* key) {
  if (!j.is_object()) return "";
  auto it = j.find(key);
  return it == j.end() ? "" : Cell(*it);
}

std::string QueuesView(const json& answer) {
  const json& queues = Items(answer, "queues");
  std::string out;
  if (queues.empty()) {
    out = "no queues\n";
  } else {
    Table t({{"QUEUE"},
             {"PAUSED"},
             {"RATE/S", Align::kRight},
             {"CAPACITY", Align::kRight},
             {"QUEUED", Align::kRight},
             {"QUEUED_COST", Align::kRight},
             {"LEASED", Align::kRight},
             {"VERSION", Align::kRight}});
    for (const json& q : queues) {
      const json stats = q.is_object() ? q.value("stats", json::object()) : json::object();
      t.AddRow({Field(q, "name"), Field(q, "paused"), Field(q, "rate"), Field(q, "capacity"),
                Field(stats, "queued"), Field(stats, "queued_cost"), Field(stats, "leased"),
                Field(q, "version")});
    }
    out = t.Render();
  }
  if (answer.is_object() && answer.contains("waiting_leases")) {
    out += "workers waiting: " + Field(answer, "waiting_leases") + "\n";
  }
  return out;
}

std::string TenantsView(const json& answer) {
  const json& tenants = Items(answer, "tenants");
  if (tenants.empty()) return "no tenants have jobs in queue " + Field(answer, "queue") + "\n";
  Table t({{"TENANT"},
           {"QUEUED", Align::kRight},
           {"QUEUED_COST", Align::kRight},
           {"LEASED", Align::kRight},
           {"NEXT_RELEASE"},
           {"OLDEST_AGE", Align::kRight},
           {"RATE/S", Align::kRight},
           {"CAPACITY", Align::kRight}});
  for (const json& b : tenants) {
    t.AddRow({Field(b, "tenant"), Field(b, "queued"), Field(b, "queued_cost"), Field(b, "leased"),
              Field(b, "next_release_at"), DurationField(b, "oldest_queued_age_ms"),
              Field(b, "rate"), Field(b, "capacity")});
  }
  return t.Render();
}

std::string JobsView(const json& jobs) {
  if (!jobs.is_array() || jobs.empty()) return "no jobs\n";
  Table t({{"ID"},
           {"QUEUE"},
           {"TENANT"},
           {"STATE"},
           {"COST", Align::kRight},
           {"ATTEMPT", Align::kRight},
           {"CREATED"}});
  for (const json& j : jobs) {
    t.AddRow({Field(j, "id"), Field(j, "queue"), Field(j, "tenant"), Field(j, "state"),
              Field(j, "cost"), Field(j, "attempt") + "/" + Field(j, "max_attempts"),
              Field(j, "created_at")});
  }
  return t.Render();
}

std::string JobView(const json& job) {
  std::vector<std::pair<std::string, std::string>> f = {{"id", Field(job, "id")},
                                                        {"queue", Field(job, "queue")},
                                                        {"tenant", Field(job, "tenant")},
                                                        {"state", Field(job, "state")}};
  if (Field(job, "state") == "queued") {
    f.push_back({"blocked_by", Field(job, "blocked_by")});
    f.push_back({"estimated_start", Field(job, "estimated_start")});
  }
  f.insert(f.end(), {{"cost", Field(job, "cost")},
                     {"attempt", Field(job, "attempt") + " of " + Field(job, "max_attempts")},
                     {"policy_version", Field(job, "policy_version")},
                     {"created_at", Field(job, "created_at")},
                     {"not_before", Field(job, "not_before")},
                     {"deadline", Field(job, "deadline")},
                     {"lease_expires_at", Field(job, "lease_expires_at")},
                     {"finished_at", Field(job, "finished_at")},
                     {"payload", InlineJson(job, "payload")},
                     {"result", InlineJson(job, "result")},
                     {"errors", InlineJson(job, "errors")}});
  return RenderFields(f);
}

std::string PausedView(const json& queue) {
  bool paused = queue.is_object() && queue.value("paused", false);
  return "queue " + CleanCell(Field(queue, "name")) +
         (paused ? ": paused (intake goes on, nothing is dispatched)\n" : ": dispatching\n");
}

std::string CreatedTokenView(const json& answer) {
  return RenderFields({{"id", Field(answer, "id")},
                       {"token", Field(answer, "token")},
                       {"tenant", Field(answer, "tenant")},
                       {"scopes", Field(answer, "scopes")},
                       {"queues", Field(answer, "queues")}});
}

std::string TokensView(const json& answer) {
  const json& tokens = Items(answer, "tokens");
  if (tokens.empty()) return "no tokens\n";
  Table t({{"ID"}, {"TENANT"}, {"SCOPES"}, {"QUEUES"}, {"CREATED"}, {"REVOKED"}});
  for (const json& k : tokens) {
    t.AddRow({Field(k, "id"), Field(k, "tenant"), Field(k, "scopes"), Field(k, "queues"),
              Field(k, "created_at"), Field(k, "revoked_at")});
  }
  return t.Render();
}

std::string RevokedView(const json& answer) {
  return "token " + CleanCell(Field(answer, "id")) + " revoked at " +
         CleanCell(Field(answer, "revoked_at")) + "\n";
}

std::string SubmittedView(const json& job, bool replayed) {
  std::string line = CleanCell(Field(job, "id")) + "  " + CleanCell(Field(job, "state"));
  if (job.is_object() && job.contains("estimated_start") && !job["estimated_start"].is_null()) {
    line += "  estimated_start " + CleanCell(Field(job, "estimated_start"));
  }
  if (replayed) line += "  (idempotent replay: the job admitted earlier)";
  return line + "\n";
}

}  // namespace sluice::cli
