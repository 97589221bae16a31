#include "server/metrics.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <tuple>

#include "server/process_metrics.h"

namespace sluice {
namespace {

const std::vector<double> kLatencyBounds = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                            0.25,   0.5,   1,      2.5,   5,    10,    30};
const std::vector<double> kLagBounds = {0.0001, 0.00025, 0.0005, 0.001, 0.002, 0.005,
                                        0.01,   0.025,   0.05,   0.1,   0.25,  1};
const std::vector<double> kBatchBounds = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512};

void Header(std::string& out, const char* name, const char* type, const char* help) {
  AppendFamilyHeader(out, name, type, help);
}

void Sample(std::string& out, const std::string& name, const std::string& labels, double v) {
  out += name;
  if (!labels.empty()) out += "{" + labels + "}";
  out += ' ';
  out += PrometheusNumber(v);
  out += '\n';
}

std::string QT(const std::string& queue, const std::string& tenant) {
  return "queue=\"" + EscapeLabel(queue) + "\",tenant=\"" + EscapeLabel(tenant) + "\"";
}

}  // namespace

void AppendFamilyHeader(std::string& out, std::string_view name, std::string_view type,
                        std::string_view help) {
  out += "# HELP ";
  out += name;
  out += ' ';
  out += help;
  out += "\n# TYPE ";
  out += name;
  out += ' ';
  out += type;
  out += '\n';
}

std::string PrometheusNumber(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[64];
  // The shortest digits in exponent form first, to learn the exponent as Go's 'g' does.
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
  if (ec != std::errc()) return "NaN";
  const std::string_view sci(buf, static_cast<size_t>(end - buf));
  const size_t e = sci.find('e');
  const int exponent = std::atoi(std::string(sci.substr(e + 1)).c_str());
  if (exponent < -4 || exponent >= 6) return std::string(sci);  // Go: shortest -> precision 6
  const std::string exp_form(sci);
  const auto fixed = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed);
  if (fixed.ec != std::errc()) return exp_form;
  return std::string(buf, static_cast<size_t>(fixed.ptr - buf));
}

std::string EscapeLabel(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::Observe(double value) {
  size_t i = std::lower_bound(bounds_.begin(), bounds_.end(), value) - bounds_.begin();
  ++counts_[i];
  sum_ += value;
  ++count_;
}

void Histogram::Render(std::string& out, const std::string& name, const std::string& labels) const {
  const std::string sep = labels.empty() ? "" : ",";
  uint64_t cumulative = 0;
  for (size_t i = 0; i < bounds_.size(); ++i) {
    cumulative += counts_[i];
    Sample(out, name + "_bucket", labels + sep + "le=\"" + PrometheusNumber(bounds_[i]) + "\"",
           static_cast<double>(cumulative));
  }
  Sample(out, name + "_bucket", labels + sep + "le=\"+Inf\"", static_cast<double>(count_));
  Sample(out, name + "_sum", labels, sum_);
  Sample(out, name + "_count", labels, static_cast<double>(count_));
}

Metrics::Metrics(size_t max_tenants)
    : max_tenants_(max_tenants),
      release_lag_(kLagBounds),
      commit_seconds_(kLatencyBounds),
      commit_batch_(kBatchBounds),
      flush_seconds_(kLatencyBounds),
      layer_seconds_(kLatencyBounds) {}

std::string Metrics::TenantLabel(const std::string& tenant) {
  if (tenant.empty() || tenants_.count(tenant)) return tenant;
  if (tenants_.size() >= max_tenants_) return "other";
  tenants_.insert(tenant);
  return tenant;
}

void Metrics::CountRejection(const std::string& queue, const std::string& tenant,
                             std::string_view reason) {
  std::lock_guard lock(mu_);
  std::string label = queue;
  if (!rejection_queues_.count(queue)) {
    if (rejection_queues_.size() < kMaxRejectionQueues) {
      rejection_queues_.insert(queue);
    } else {
      label = "other";
    }
  }
  ++rejections_[{label, TenantLabel(tenant), std::string(reason)}];
}

int64_t Metrics::Rejections(const std::string& queue) const {
  std::lock_guard lock(mu_);
  int64_t n = 0;
  for (const auto& [key, count] : rejections_) {
    if (std::get<0>(key) == queue) n += count;
  }
  return n;
}

void Metrics::CountLayerDecision(std::string_view layer, std::string_view route_group,
                                 std::string_view outcome) {
  std::lock_guard lock(mu_);
  ++layer_decisions_[{std::string(layer), std::string(route_group), std::string(outcome)}];
}

void Metrics::ObserveLayerDecision(double seconds) {
  std::lock_guard lock(mu_);
  layer_seconds_.Observe(seconds);
}

void Metrics::ObserveRequest(std::string_view method, std::string_view route, int status,
                             double seconds) {
  std::lock_guard lock(mu_);
  std::string key = std::string(method) + " " + std::string(route);
  auto it = requests_.find({key, std::to_string(status)});
  if (it == requests_.end()) {
    it = requests_.emplace(std::make_pair(key, std::to_string(status)), Histogram(kLatencyBounds))
             .first;
  }
  it->second.Observe(seconds);
}

void Metrics::ObserveReleaseLag(double seconds) {
  std::lock_guard lock(mu_);
  release_lag_.Observe(std::max(0.0, seconds));
}

void Metrics::ObserveFlush(double seconds) {
  std::lock_guard lock(mu_);
  flush_seconds_.Observe(seconds);
}

void Metrics::ObserveCommit(double seconds, size_t batch, bool flushed) {
  std::lock_guard lock(mu_);
  commit_seconds_.Observe(seconds);
  commit_batch_.Observe(static_cast<double>(batch));
  if (flushed) ++commits_flushed_;
}

std::string Metrics::Render(const std::vector<QueueState>& queues, size_t waiting_leases,
                            bool maintenance_leader,
                            const std::optional<LimitStats>& limits) const {
  std::string out;
  out.reserve(16 << 10);

  // Per-tenant state from the store, the deepest `max_tenants_` buckets by name and the
  // rest as "other".
  struct Row {
    std::string queue, tenant;
    int64_t queued = 0, queued_cost = 0, leased = 0;
    Totals totals;
  };
  std::vector<Row> rows;
  for (const QueueState& q : queues) {
    std::vector<const BucketInfo*> order;
    for (const BucketInfo& b : q.buckets) order.push_back(&b);
    std::sort(order.begin(), order.end(), [](const BucketInfo* a, const BucketInfo* b) {
      return a->queued_cost != b->queued_cost ? a->queued_cost > b->queued_cost
                                              : a->tenant < b->tenant;
    });
    Row other{q.queue.name, "other", 0, 0, 0, {}};
    bool has_other = false;
    for (size_t i = 0; i < order.size(); ++i) {
      const BucketInfo& b = *order[i];
      Row* r = &other;
      if (i < max_tenants_) {
        rows.push_back(Row{q.queue.name, b.tenant, 0, 0, 0, {}});
        r = &rows.back();
      } else {
        has_other = true;
      }
      r->queued += b.queued;
      r->queued_cost += b.queued_cost;
      r->leased += b.leased;
      r->totals.admitted += b.totals.admitted;
      r->totals.released += b.totals.released;
      r->totals.succeeded += b.totals.succeeded;
      r->totals.failed += b.totals.failed;
      r->totals.expired += b.totals.expired;
      r->totals.lease_timeouts += b.totals.lease_timeouts;
    }
    if (has_other) rows.push_back(other);
  }

  auto gauge = [&](const char* name, const char* help, auto value) {
    Header(out, name, "gauge", help);
    for (const Row& r : rows)
      Sample(out, name, QT(r.queue, r.tenant), static_cast<double>(value(r)));
  };
  auto counter = [&](const char* name, const char* help, auto value) {
    Header(out, name, "counter", help);
    for (const Row& r : rows)
      Sample(out, name, QT(r.queue, r.tenant), static_cast<double>(value(r)));
  };
  gauge("sluice_queued_jobs", "Jobs waiting in a tenant's bucket.",
        [](const Row& r) { return r.queued; });
  gauge("sluice_queued_cost", "Cost units waiting in a tenant's bucket.",
        [](const Row& r) { return r.queued_cost; });
  gauge("sluice_leased_jobs", "Jobs leased to workers now.", [](const Row& r) { return r.leased; });
  counter("sluice_jobs_admitted_total", "Jobs admitted (202).",
          [](const Row& r) { return r.totals.admitted; });
  counter("sluice_jobs_released_total", "Jobs released to workers (leases granted).",
          [](const Row& r) { return r.totals.released; });
  counter("sluice_jobs_succeeded_total", "Jobs completed.",
          [](const Row& r) { return r.totals.succeeded; });
  counter("sluice_jobs_failed_total", "Jobs failed for good.",
          [](const Row& r) { return r.totals.failed; });
  counter("sluice_jobs_expired_total", "Queued jobs that reached their deadline.",
          [](const Row& r) { return r.totals.expired; });
  counter("sluice_lease_timeouts_total", "Leases that ran out without an answer.",
          [](const Row& r) { return r.totals.lease_timeouts; });

  Header(out, "sluice_queue_paused", "gauge", "1 while a queue's dispatch is paused.");
  for (const QueueState& q : queues) {
    Sample(out, "sluice_queue_paused", "queue=\"" + EscapeLabel(q.queue.name) + "\"",
           q.queue.paused ? 1 : 0);
  }
  Header(out, "sluice_waiting_leases", "gauge", "Long-polls parked, waiting for work.");
  Sample(out, "sluice_waiting_leases", "", static_cast<double>(waiting_leases));
  Header(out, "sluice_maintenance_leader", "gauge",
         "1 if this instance runs lease expiry, deadline expiry and cleaning now (one "
         "instance at a time on a shared database).");
  Sample(out, "sluice_maintenance_leader", "", maintenance_leader ? 1 : 0);

  std::lock_guard lock(mu_);
  Header(out, "sluice_jobs_rejected_total", "counter",
         "Submits refused, by reason (the error code), since this process started.");
  for (const auto& [key, count] : rejections_) {
    const auto& [queue, tenant, reason] = key;
    Sample(out, "sluice_jobs_rejected_total",
           QT(queue, tenant) + ",reason=\"" + EscapeLabel(reason) + "\"",
           static_cast<double>(count));
  }
  Header(out, "sluice_release_lag_seconds", "histogram",
         "Hand-out time of a released job minus its scheduled release time.");
  release_lag_.Render(out, "sluice_release_lag_seconds", "");
  Header(out, "sluice_storage_commit_seconds", "histogram",
         "Duration of one group commit (with synchronous FULL on a WAL file, without its "
         "flush, which sluice_storage_flush_seconds times).");
  commit_seconds_.Render(out, "sluice_storage_commit_seconds", "");
  Header(out, "sluice_storage_commit_batch_size", "histogram", "Operations per group commit.");
  commit_batch_.Render(out, "sluice_storage_commit_batch_size", "");
  Header(out, "sluice_storage_flush_seconds", "histogram",
         "Duration of one flush of the write-ahead log to disk (fdatasync), made while the "
         "next operations run into the next transaction.");
  flush_seconds_.Render(out, "sluice_storage_flush_seconds", "");
  Header(out, "sluice_storage_flushed_commits_total", "counter",
         "Group commits that waited for the disk.");
  Sample(out, "sluice_storage_flushed_commits_total", "", static_cast<double>(commits_flushed_));
  Header(out, "sluice_limiter_decisions_total", "counter",
         "Intake-protection layer decisions by layer, route group and outcome (allowed, "
         "rejected, failed_open, failed_closed), as this instance made them.");
  for (const auto& [key, count] : layer_decisions_) {
    const auto& [layer, group, outcome] = key;
    Sample(out, "sluice_limiter_decisions_total",
           "layer=\"" + EscapeLabel(layer) + "\",route_group=\"" + EscapeLabel(group) +
               "\",outcome=\"" + EscapeLabel(outcome) + "\"",
           static_cast<double>(count));
  }
  Header(out, "sluice_limiter_decision_seconds", "histogram",
         "Time to decide one request's intake layers (one store transaction for all).");
  layer_seconds_.Render(out, "sluice_limiter_decision_seconds", "");
  if (limits) {
    Header(out, "sluice_limiter_active_keys", "gauge",
           "Intake limiter keys whose state is still in use (every instance's).");
    Sample(out, "sluice_limiter_active_keys", "", static_cast<double>(limits->keys));
    Header(out, "sluice_limiter_sliding_log_bytes", "gauge",
           "Bytes of state the sliding-log layers' keys hold in the store.");
    Sample(out, "sluice_limiter_sliding_log_bytes", "", static_cast<double>(limits->log_bytes));
  }
  Header(out, "sluice_http_request_duration_seconds", "histogram",
         "HTTP requests by route and status, from request read to response written.");
  for (const auto& [key, h] : requests_) {
    const std::string& route = key.first;
    size_t sp = route.find(' ');
    h.Render(out, "sluice_http_request_duration_seconds",
             "method=\"" + EscapeLabel(route.substr(0, sp)) + "\",route=\"" +
                 EscapeLabel(route.substr(sp + 1)) + "\",status=\"" + key.second + "\"");
  }
  if (auto process = ReadProcessStats()) RenderProcessMetrics(out, *process);
  return out;
}

}  // namespace sluice
