#include "server/layer_gate.h"

#include <spdlog/spdlog.h>

#include <chrono>

#include "common/crypto.h"
#include "common/strict_json.h"
#include "server/log.h"

namespace sluice {
namespace {

double SteadySeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The RateLimit-Policy and RateLimit items of one layer (draft-ietf-httpapi-ratelimit-
// headers): a window only for algorithms that have one, a reset only when the
// algorithm names the instant its quota is whole again.
void AddFields(std::vector<std::pair<std::string, std::string>>& headers, const Layer& layer,
               const LimitDecision& d) {
  std::string policy = "\"" + layer.name + "\";q=" + std::to_string(layer.limit.limit);
  if (layer.limit.algorithm != Algorithm::kConcurrency) {
    policy += ";w=" + std::to_string(std::max<int64_t>(1, CeilSeconds(layer.limit.window)));
  }
  std::string now = "\"" + layer.name + "\";r=" + std::to_string(std::max<int64_t>(0, d.remaining));
  if (d.reset_after) now += ";t=" + std::to_string(CeilSeconds(*d.reset_after));
  headers.emplace_back("RateLimit-Policy", std::move(policy));
  headers.emplace_back("RateLimit", std::move(now));
}

std::string IdentityHash(const std::string& identity) { return Sha256Hex(identity).substr(0, 16); }

}  // namespace

LayerGate::LayerGate(Store& store, const Authenticator& auth, const Clock& clock, Metrics& metrics)
    : store_(store),
      auth_(auth),
      clock_(clock),
      metrics_(metrics),
      policy_(std::make_shared<Policy>(Policy{0, DefaultLayers()})) {}

std::string LayerGate::KeyOf(const std::string& layer, const std::string& identity) {
  return "rl:v1:" + layer + ":" + identity;
}

Status LayerGate::Load() {
  stale_.store(false);
  auto stored = store_.GetLimitLayers();
  if (!stored.ok()) {
    stale_.store(true);  // try again on the next request
    return stored.error();
  }
  auto next = std::make_shared<Policy>(Policy{0, DefaultLayers()});
  if (stored.value()) {
    auto parsed = ParseStrictJson(stored.value()->body);
    Result<std::vector<Layer>> layers =
        parsed.ok() ? ReadLayers(parsed.value()) : Result<std::vector<Layer>>(parsed.error());
    if (!layers.ok()) {
      return MakeError(ErrorCode::kInternal,
                       "the stored intake layers do not read: " + layers.error().detail);
    }
    next->version = stored.value()->version;
    next->layers = std::move(layers.value());
  }
  std::lock_guard lock(mu_);
  policy_ = std::move(next);
  return Ok{};
}

std::shared_ptr<const LayerGate::Policy> LayerGate::policy() const {
  std::lock_guard lock(mu_);
  return policy_;
}

Result<std::shared_ptr<const LayerGate::Policy>> LayerGate::Put(const std::vector<Layer>& layers,
                                                                Micros now) {
  auto version = store_.PutLimitLayers(LayersToJson(layers).dump(), now);
  if (!version.ok()) return version.error();
  auto next = std::make_shared<const Policy>(Policy{version.value(), layers});
  std::lock_guard lock(mu_);
  // A concurrent Load may have read a newer version meanwhile: keep the newest.
  if (!policy_ || policy_->version <= next->version) policy_ = next;
  return std::shared_ptr<const Policy>(policy_);
}

std::optional<GateResult> LayerGate::Admit(const HttpRequest& req, RouteGroup group,
                                           std::function<void(GateResult)> later) {
  if (stale_.load(std::memory_order_relaxed)) {
    if (Status st = Load(); !st.ok()) {
      LogEvent(spdlog::level::warn, "limits_reload_failed", {{"detail", st.error().detail}});
    }
  }
  std::shared_ptr<const Policy> p = policy();
  bool any = false, needs_principal = false;
  for (const Layer& l : p->layers) {
    if (!l.Guards(group)) continue;
    any = true;
    for (KeyPart part : l.key) {
      needs_principal |= part == KeyPart::kToken || part == KeyPart::kTenant;
    }
  }
  if (!any) return GateResult{};

  std::optional<Principal> who;
  if (needs_principal) {
    auto a = auth_.Authenticate(req);
    if (a.ok()) who = std::move(a.value());
  }
  std::vector<Asked> asked;
  std::vector<LimitAsk> asks;
  for (const Layer& l : p->layers) {
    if (!l.Guards(group)) continue;
    std::string identity;
    bool complete = true;
    for (KeyPart part : l.key) {
      std::string value;
      switch (part) {
        case KeyPart::kToken:
          if (who) value = who->token_id;
          break;
        case KeyPart::kTenant:
          if (who && who->tenant) value = *who->tenant;
          break;
        case KeyPart::kIp:
          value = req.client_key;
          break;
        case KeyPart::kRouteGroup:
          value = RouteGroupName(group);
          break;
      }
      if (value.empty()) {
        complete = false;
        break;
      }
      if (!identity.empty()) identity += '|';
      identity += std::string(KeyPartName(part)) + "=" + value;
    }
    if (!complete) continue;
    asks.push_back(LimitAsk{KeyOf(l.name, identity), l.limit, l.CostOf(group)});
    asked.push_back(Asked{&l, std::move(identity)});
  }
  if (asks.empty()) return GateResult{};

  const double started = SteadySeconds();
  std::vector<LimitAsk> copy = asks;
  store_.DecideLimitsAsync(std::move(copy), clock_.Now(),
                           [this, p, group, asked = std::move(asked), asks = std::move(asks),
                            request_id = req.request_id, started,
                            later = std::move(later)](Result<LimitsOutcome> r) mutable {
                             Finish(std::move(p), group, std::move(asked), std::move(asks),
                                    request_id, started, std::move(r), later);
                           });
  return std::nullopt;
}

void LayerGate::Finish(std::shared_ptr<const Policy> policy, RouteGroup group,
                       std::vector<Asked> asked, std::vector<LimitAsk> asks,
                       const std::string& request_id, double started, Result<LimitsOutcome> r,
                       const std::function<void(GateResult)>& done) {
  metrics_.ObserveLayerDecision(SteadySeconds() - started);
  const std::string_view group_name = RouteGroupName(group);
  GateResult out;
  if (!r.ok()) {
    // The store could not decide: each layer as it chose.
    const Layer* closed = nullptr;
    for (const Asked& a : asked) {
      const bool open = a.layer->fail == FailMode::kOpen;
      metrics_.CountLayerDecision(a.layer->name, group_name,
                                  open ? "failed_open" : "failed_closed");
      if (!open && !closed) closed = a.layer;
    }
    LogEvent(spdlog::level::warn, closed ? "limiter_failed_closed" : "limiter_failed_open",
             {{"layer", closed ? closed->name : asked.front().layer->name},
              {"route_group", group_name},
              {"policy_version", policy->version},
              {"request_id", request_id},
              {"detail", r.error().detail}});
    if (closed) {
      Error e = MakeError(
          ErrorCode::kStorageUnavailable,
          "layer " + closed->name + " cannot decide (its state is out of reach) and fails closed");
      e.retry_after_s = 1;
      out.refused = std::move(e);
    }
    return done(std::move(out));
  }
  const LimitsOutcome& o = r.value();
  if (!o.allowed) {
    const size_t i = o.outcomes.size() - 1;
    const Layer& l = *asked[i].layer;
    const LimitDecision& d = o.outcomes[i].decision;
    metrics_.CountLayerDecision(l.name, group_name, "rejected");
    std::string why;
    if (d.never) {
      why = "this request's cost (" + std::to_string(asks[i].cost) + ") is above what layer " +
            l.name + " can ever admit (" + std::to_string(l.limit.limit) + ")";
    } else if (l.limit.algorithm == Algorithm::kConcurrency) {
      why = "layer " + l.name + " allows " + std::to_string(l.limit.limit) +
            " requests at once, and that many are in progress";
    } else {
      why = "layer " + l.name + " allows " + std::to_string(l.limit.limit) + " per " +
            std::to_string(std::max<int64_t>(1, CeilSeconds(l.limit.window))) + " s (" +
            std::string(AlgorithmName(l.limit.algorithm)) + ")";
    }
    Error e = MakeError(ErrorCode::kRateLimited, why);
    if (d.retry_after && !d.never) {
      e.retry_after_s = std::max<int64_t>(1, CeilSeconds(*d.retry_after));
    }
    AddFields(e.headers, l, d);
    LogEvent(spdlog::level::info, "rate_limited",
             {{"layer", l.name},
              {"route_group", group_name},
              {"algorithm", AlgorithmName(l.limit.algorithm)},
              {"policy_version", policy->version},
              {"identity", IdentityHash(asked[i].identity)},
              {"decision", "denied"},
              {"remaining", d.remaining},
              {"cost", asks[i].cost},
              {"retry_after_s", e.retry_after_s ? *e.retry_after_s : -1},
              {"reason", d.never                                        ? "cost_above_limit"
                         : l.limit.algorithm == Algorithm::kConcurrency ? "in_flight"
                                                                        : "limit_reached"},
              {"request_id", request_id}});
    out.refused = std::move(e);
    return done(std::move(out));
  }
  std::vector<LimitAsk> held;
  for (size_t i = 0; i < o.outcomes.size(); ++i) {
    metrics_.CountLayerDecision(asked[i].layer->name, group_name, "allowed");
    AddFields(out.headers, *asked[i].layer, o.outcomes[i].decision);
    if (asks[i].limit.algorithm == Algorithm::kConcurrency) held.push_back(asks[i]);
  }
  if (!held.empty()) {
    out.on_end = [this, held = std::move(held)]() mutable {
      store_.ReleaseLimitsAsync(std::move(held), clock_.Now(), [](Result<Ok> released) {
        if (!released.ok()) {
          LogEvent(spdlog::level::warn, "limiter_release_failed",
                   {{"detail", released.error().detail}});
        }
      });
    };
  }
  done(std::move(out));
}

}  // namespace sluice
