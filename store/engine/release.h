// Release selection: which queued jobs leave their buckets for a set of lease
// requests, in one transaction. The shaper (shaper/dispatch.h) picks each release;
// this walks the buckets, applies the picks and keeps the bucket views current.
#pragma once

#include <vector>

#include "store/engine/tx.h"
#include "store/store.h"

namespace sluice {

// Locks every queue the requests name, in name order. Releases from a queue (its TAT
// and caps) are decided one transaction at a time, and two lease transactions never
// wait for each other in a cycle. Call before reading the decision's time, so that it
// is read after any transaction this one waited for has committed.
void LockRequestedQueues(Tx& tx, const std::vector<LeaseRequest>& requests);

// Leases for `requests` in order: requests naming the same queues share one pass over
// their buckets, releases handed to them first-in first-out. The queues must be locked
// (LockRequestedQueues). Jobs whose release time falls in [now, horizon] are released
// at that time. `outs` is parallel to `requests`.
void LeaseAll(Tx& tx, const std::vector<LeaseRequest>& requests, std::vector<LeaseOutcome>& outs,
              Micros now, Micros horizon);

}  // namespace sluice
