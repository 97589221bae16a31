// What the HTTP handlers share: the store, the authenticator, the dispatcher and the
// clock. Owned by main.cc; handlers only borrow it. Thread-safe (its parts are).
#pragma once

#include <httplib.h>

#include "server/auth.h"
#include "server/dispatcher.h"
#include "shaper/clock.h"
#include "store/store.h"

namespace sluice {

struct App {
  Store& store;
  Authenticator& auth;
  Dispatcher& dispatcher;
  const Clock& clock;
  int64_t max_wait_ms = 30000;  // longest long-poll a worker may ask for
};

// Route registration, one function per group of routes.
void RegisterJobRoutes(httplib::Server& server, App& app);
void RegisterLeaseRoutes(httplib::Server& server, App& app);
void RegisterAdminRoutes(httplib::Server& server, App& app);
void RegisterHealthRoutes(httplib::Server& server, App& app);

// All of the above plus the error and exception handlers.
void RegisterRoutes(httplib::Server& server, App& app);

}  // namespace sluice
