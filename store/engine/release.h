// Release selection: which queued jobs leave their buckets for a set of lease
// requests, in one transaction. The shaper (shaper/dispatch.h) picks each release;
// this walks the buckets, applies the picks and keeps the bucket views current.
#pragma once

#include <vector>

#include "store/engine/tx.h"
#include "store/store.h"

namespace sluice {

// Leases for `requests` in order: requests naming the same queues share one pass over
// their buckets, releases handed to them first-in first-out. Locks every named queue
// (in name order) first. Jobs whose release time falls in [now, horizon] are released
// at that time. `outs` is parallel to `requests`.
void LeaseAll(Tx& tx, const std::vector<LeaseRequest>& requests, std::vector<LeaseOutcome>& outs,
              Micros now, Micros horizon);

}  // namespace sluice
