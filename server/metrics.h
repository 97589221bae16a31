// Prometheus metrics (text exposition format 0.0.4, `sluice_` prefix). Counts that
// only this process sees (rejections, request durations, release lag, commits) are
// kept here in memory; queue depth and the job totals are read from the store at
// scrape time, so they survive restarts.
//
// Cardinality: at most `max_tenants` tenant label values per metric; beyond that,
// tenants are counted under tenant="other" (at scrape, the deepest buckets keep
// their names), so 100k tenants cannot blow up a scrape.
// Thread-safe.
#pragma once

#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "store/store.h"

namespace sluice {

class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);
  void Observe(double value);
  // Appends the _bucket, _sum and _count series; `labels` like `route="/x",status="200"`.
  void Render(std::string& out, const std::string& name, const std::string& labels) const;

 private:
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;  // per bound, not cumulative; plus +Inf at the end
  double sum_ = 0;
  uint64_t count_ = 0;
};

class Metrics {
 public:
  explicit Metrics(size_t max_tenants = 100);

  // A refused submit: reason is the error code (queue_full, deadline_unreachable,
  // unauthorized, ...); queue and tenant may be empty when unknown.
  void CountRejection(const std::string& queue, const std::string& tenant, std::string_view reason);
  int64_t Rejections(const std::string& queue) const;

  void ObserveRequest(std::string_view method, std::string_view route, int status, double seconds);
  // Actual hand-out time minus the scheduled release time.
  void ObserveReleaseLag(double seconds);
  void ObserveCommit(double seconds, size_t batch, bool flushed);
  void ObserveFlush(double seconds);

  // An intake layer's decision on one request: outcome is allowed, rejected,
  // failed_open or failed_closed (server/layer_gate.h). Layers and route groups are
  // few (at most kMaxLayers x 7 series).
  void CountLayerDecision(std::string_view layer, std::string_view route_group,
                          std::string_view outcome);
  // One request's layer decisions, from asking to the answer (a store round trip).
  void ObserveLayerDecision(double seconds);

  struct QueueState {
    QueueInfo queue;
    std::vector<BucketInfo> buckets;
  };
  // `maintenance_leader`: whether this instance runs the maintenance passes now;
  // `limits`: the intake limiters' keys, read from the store at scrape time (every
  // instance's on PostgreSQL), if it could be read.
  std::string Render(const std::vector<QueueState>& queues, size_t waiting_leases,
                     bool maintenance_leader = true,
                     const std::optional<LimitStats>& limits = std::nullopt) const;

 private:
  std::string TenantLabel(const std::string& tenant);  // mu_ held

  const size_t max_tenants_;
  mutable std::mutex mu_;
  std::set<std::string> tenants_;  // tenant label values in use (mu_)
  std::map<std::tuple<std::string, std::string, std::string>, int64_t> rejections_;  // (mu_)
  // Queue label values of rejections: a refused request may name any queue, so at most
  // kMaxRejectionQueues keep their name and the rest count as queue="other".
  static constexpr size_t kMaxRejectionQueues = 1000;
  std::set<std::string> rejection_queues_;                             // guarded by mu_
  std::map<std::pair<std::string, std::string>, Histogram> requests_;  // (route, status) (mu_)
  Histogram release_lag_;                                              // (mu_)
  Histogram commit_seconds_;                                           // (mu_)
  Histogram commit_batch_;                                             // (mu_)
  Histogram flush_seconds_;                                            // (mu_)
  uint64_t commits_flushed_ = 0;                                       // (mu_)
  std::map<std::tuple<std::string, std::string, std::string>, int64_t> layer_decisions_;  // (mu_)
  Histogram layer_seconds_;                                                               // (mu_)
};

// Escapes a Prometheus label value (backslash, double quote, newline).
std::string EscapeLabel(std::string_view v);

// A sample value or an `le` bound as the Prometheus client libraries print it (Go's
// strconv.FormatFloat(v, 'g', -1, 64)): the shortest text that reads back as the same
// double, in exponent form below 1e-4 and from 1e6 up: 0.00025, 1024, 1e-05, 2.5e+06, +Inf.
std::string PrometheusNumber(double v);

// Appends a metric family's `# HELP` and `# TYPE` lines.
void AppendFamilyHeader(std::string& out, std::string_view name, std::string_view type,
                        std::string_view help);

}  // namespace sluice
