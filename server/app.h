// What the HTTP handlers share: the store, the authenticator, the dispatcher and the
// clock. Owned by main.cc; handlers only borrow it. Thread-safe (its parts are).
#pragma once

#include "server/auth.h"
#include "server/dispatcher.h"
#include "server/metrics.h"
#include "server/router.h"
#include "shaper/clock.h"
#include "store/store.h"

namespace sluice {

class LayerGate;

struct App {
  Store& store;
  Authenticator& auth;
  Dispatcher& dispatcher;
  const Clock& clock;
  Metrics& metrics;
  int64_t max_wait_ms = 30000;  // longest long-poll a worker may ask for
  LayerGate* layers = nullptr;  // the intake-protection layers (/v1/admin/limits)
};

// Route registration, one function per group of routes.
void RegisterJobRoutes(Router& router, App& app);
void RegisterLeaseRoutes(Router& router, App& app);
void RegisterAdminRoutes(Router& router, App& app);
void RegisterHealthRoutes(Router& router, App& app);
void RegisterLimitRoutes(Router& router, App& app);

// All of the above.
void RegisterRoutes(Router& router, App& app);

}  // namespace sluice
