#include "server/auth_failures.h"

#include <spdlog/spdlog.h>

#include "server/log.h"

namespace sluice {
namespace {

// Blocked clients this instance remembers before it forgets those whose block ended.
constexpr size_t kSweepAbove = 10000;

}  // namespace

AuthFailureGuard::AuthFailureGuard(Store& store, const Clock& clock, int64_t limit, Micros window)
    : store_(store), clock_(clock), limit_{Algorithm::kFixedWindow, limit, window, 1} {}

std::string AuthFailureGuard::KeyOf(const std::string& client_key) {
  return client_key.empty() ? "" : "rl:v1:auth_failures:ip:" + client_key;
}

std::optional<Error> AuthFailureGuard::Check(const HttpRequest& req) {
  if (!enabled() || req.client_key.empty()) return std::nullopt;
  Micros until = 0;
  {
    std::lock_guard lock(blocks_->mu);
    auto it = blocks_->until.find(req.client_key);
    if (it == blocks_->until.end()) return std::nullopt;
    until = it->second;
  }
  const Micros now = clock_.Now();
  if (until <= now) return std::nullopt;
  return Refusal(until - now);
}

Error AuthFailureGuard::Refusal(Micros wait) const {
  const int64_t seconds = std::max<int64_t>(1, CeilSeconds(wait));
  Error e = MakeError(ErrorCode::kRateLimited,
                      "too many failed authentications from this address; try again in " +
                          std::to_string(seconds) + " s");
  e.retry_after_s = seconds;
  // The layer's quota and what is left of it (draft-ietf-httpapi-ratelimit-headers).
  e.headers = {{"RateLimit-Policy", "\"auth_failures\";q=" + std::to_string(limit_.limit) +
                                        ";w=" + std::to_string(CeilSeconds(limit_.window))},
               {"RateLimit", "\"auth_failures\";r=0;t=" + std::to_string(seconds)}};
  return e;
}

void AuthFailureGuard::Blocks::Block(const std::string& client_key, Micros at, Micros now) {
  std::lock_guard lock(mu);
  if (until.size() >= kSweepAbove) {
    for (auto it = until.begin(); it != until.end();) {
      it = it->second <= now ? until.erase(it) : std::next(it);
    }
  }
  Micros& u = until[client_key];
  u = std::max(u, at);
}

void AuthFailureGuard::OnFailure(const HttpRequest& req) {
  if (!enabled() || req.client_key.empty()) return;
  const Micros now = clock_.Now();
  store_.DecideLimitAsync(KeyOf(req.client_key), limit_, 1, now,
                          [blocks = blocks_, limit = limit_, client_key = req.client_key,
                           client_ip = req.client_ip, now](Result<LimitOutcome> r) {
                            if (!r.ok()) {
                              LogEvent(spdlog::level::warn, "limiter_failed_open",
                                       {{"layer", "auth_failures"}, {"detail", r.error().detail}});
                              return;
                            }
                            const LimitOutcome& o = r.value();
                            if (!o.next_unit_after || *o.next_unit_after == 0)
                              return;  // failures left
                            blocks->Block(client_key, now + *o.next_unit_after, now);
                            LogEvent(spdlog::level::info, "rate_limited",
                                     {{"layer", "auth_failures"},
                                      {"algorithm", AlgorithmName(limit.algorithm)},
                                      {"key", KeyOf(client_key)},
                                      {"client_ip", client_ip},
                                      {"decision", o.decision.allowed ? "last_allowed" : "denied"},
                                      {"remaining", o.decision.remaining},
                                      {"retry_after_s", CeilSeconds(*o.next_unit_after)},
                                      {"reason", "failed authentications"}});
                          });
}

}  // namespace sluice
