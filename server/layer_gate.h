// The intake-protection layers at work (DESIGN.md "Intake protection layers"): after
// a request's route is known and before its handler runs, every layer guarding the
// route's group decides it, in one store transaction on the store's clock (all or
// nothing: a request one layer refuses spends nothing in the others), so on PostgreSQL
// a layer's limit holds across every instance.
//
//   * Keys are versioned and built from identity, never from secrets:
//     rl:v1:<layer>:<part>=<value>|... with the token's public id, the tenant, the
//     client key (server/client_ip.h) and the route group. A layer whose key needs a
//     part the request lacks (no valid token) does not count it.
//   * A refusal answers 429 rate_limited with Retry-After (none when no wait helps, as
//     for a concurrency layer or a cost above the limit) and RateLimit fields that
//     describe the refusing layer; an admitted request gets every deciding layer's.
//   * When the store cannot decide: fail-open layers admit (logged, counted), a
//     fail-closed one refuses with 503 storage_unavailable.
//   * A concurrency layer's slot is given back when the answer is written.
//   * Every decision is counted (Metrics::CountLayerDecision); every refusal is logged
//     with the identity's hash, route group, algorithm and policy version (every log
//     line names its instance).
//
// The layers in force are the declared ones (store, versioned) or DefaultLayers(); an
// instance reloads them when the store says another changed them (MarkStale).
// Thread-safe.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "server/auth.h"
#include "server/http_server.h"
#include "server/limit_layers.h"
#include "server/metrics.h"
#include "shaper/clock.h"
#include "store/store.h"

namespace sluice {

class LayerGate {
 public:
  struct Policy {
    int64_t version = 0;  // 0: no layers declared, the defaults hold
    std::vector<Layer> layers;
  };

  LayerGate(Store& store, const Authenticator& auth, const Clock& clock, Metrics& metrics);

  // Reads the layers in force from the store.
  Status Load();
  std::shared_ptr<const Policy> policy() const;
  // Replaces the declared layers (admin API, config file); the new policy.
  Result<std::shared_ptr<const Policy>> Put(const std::vector<Layer>& layers, Micros now);
  // Another instance changed the layers: reload before the next decision. Any thread,
  // never blocks.
  void MarkStale() { stale_.store(true); }

  // HttpServerOptions::gate.
  std::optional<GateResult> Admit(const HttpRequest& req, RouteGroup group,
                                  std::function<void(GateResult)> later);

  // The store key of one layer's identity parts (for tests and logs).
  static std::string KeyOf(const std::string& layer, const std::string& identity);

 private:
  struct Asked {
    const Layer* layer;
    std::string identity;  // "token=tok_x|ip=10.0.0.1"
  };
  void Finish(std::shared_ptr<const Policy> policy, RouteGroup group, std::vector<Asked> asked,
              std::vector<LimitAsk> asks, const std::string& request_id, double started,
              Result<LimitsOutcome> r, const std::function<void(GateResult)>& done);

  Store& store_;
  const Authenticator& auth_;
  const Clock& clock_;
  Metrics& metrics_;
  std::atomic<bool> stale_{false};
  mutable std::mutex mu_;
  std::shared_ptr<const Policy> policy_;  // guarded by mu_
};

}  // namespace sluice
