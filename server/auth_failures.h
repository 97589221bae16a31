// The intake-protection layer that is on by default: failed authentications per client
// address (DESIGN.md "Intake protection layers"). Each 401 is counted against the
// client's key (rl:v1:auth_failures:ip:<address or IPv6 /64>) in a fixed window in the
// store, atomically and on the store's clock, so on PostgreSQL the count is global
// across instances. Once a client has no failure left in its window, every request
// from it is answered 429 rate_limited before any work (routing, authentication) until
// the window ends: by this instance from then on, by another from the next failure it
// counts for that client. Failing open: when the store cannot count, the failure goes
// uncounted (authentication itself still refuses the request) and a warning is logged.
// Thread-safe.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "common/error.h"
#include "server/http_types.h"
#include "shaper/clock.h"
#include "shaper/limiters/limiter.h"
#include "store/store.h"

namespace sluice {

class AuthFailureGuard {
 public:
  // `limit` failures per `window`; a limit of 0 turns the layer off.
  AuthFailureGuard(Store& store, const Clock& clock, int64_t limit, Micros window);

  bool enabled() const { return limit_.limit > 0; }

  // Before routing: the 429 to answer when the request's client is blocked.
  std::optional<Error> Check(const HttpRequest& req);
  // A request was answered 401: counts it for its client (in the background).
  void OnFailure(const HttpRequest& req);

  // The store key of a client key ("" for none).
  static std::string KeyOf(const std::string& client_key);

 private:
  // Clients blocked here, by client key. Shared with the store's callbacks, which may
  // run after the guard is gone (a store finishing its queue as it closes).
  struct Blocks {
    std::mutex mu;
    std::unordered_map<std::string, Micros> until;  // guarded by mu
    void Block(const std::string& client_key, Micros at, Micros now);
  };

  Error Refusal(Micros wait) const;

  Store& store_;
  const Clock& clock_;
  const Limit limit_;
  std::shared_ptr<Blocks> blocks_ = std::make_shared<Blocks>();
};

}  // namespace sluice
