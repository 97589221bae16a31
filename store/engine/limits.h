// Intake-limiter decisions inside one store transaction (Store::DecideLimitsAsync): the
// rule is shaper/limiters', the atomicity the store's. Many requests' decisions are
// decided together (the engine gathers those that arrive while a batch runs), so a
// batch costs one lock, one read and at most one write per distinct key, whatever the
// number of requests: a hot key (one busy token) is not a queue of transactions waiting
// for its row.
//
// Invariants:
//   1. Keys are locked in sorted order, so batches on several connections or instances
//      never wait on each other in a cycle.
//   2. Requests are decided in the order given, each against the state the ones before
//      it left; a request one of its layers refuses spends nothing in any layer.
//   3. A key's row past its expires_at reads as a new key's state.
#pragma once

#include <vector>

#include "store/engine/tx.h"
#include "store/store.h"

namespace sluice {

// One request's layers and the time it was asked at (the caller's clock; a transaction
// on the database's clock decides at the database's time instead).
struct LimitRequest {
  const std::vector<LimitAsk>* asks;
  Micros now;
};

// The decisions of each request, in order (LimitsOutcome: up to the first refusal).
// Each LimitOutcome's next_unit_after says how long until one more unit would pass.
std::vector<LimitsOutcome> DecideLimitBatch(Tx& tx, const std::vector<LimitRequest>& requests);

// Gives back what requests admitted with `asks` held (concurrency).
void ReleaseLimits(Tx& tx, const std::vector<LimitAsk>& asks, Micros caller_now);

}  // namespace sluice
