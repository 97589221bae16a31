// How attempts end and what a maintenance pass does, written once for every caller:
// a worker's fail, a lease that ran out (rule 7), a queued job past its deadline
// (rule 6). Each function runs inside the caller's transaction.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "store/engine/tx.h"
#include "store/store.h"

namespace sluice {

// Why a leased attempt ended without success.
struct AttemptEnd {
  std::string error;
  bool retryable = true;
  bool timed_out = false;           // the lease ran out (not a worker's fail)
  std::optional<int64_t> delay_ms;  // before the retry; else `backoff_ms()`
};

// Whether an attempt that ended so may be tried again: it is retryable, attempts are
// left, and the deadline (if any) has not come.
bool MayRetry(const LeaseRow& lease, const AttemptEnd& end, Micros now);

// Ends `lease`'s attempt: back to queued (after the delay) when MayRetry, else failed
// for good; the bucket's counters follow. `backoff_ms` is asked only for a retry
// without its own delay. Nothing when the job is no longer leased (a lost race).
std::optional<JobRecord> EndLeasedAttempt(Tx& tx, const LeaseRow& lease, const AttemptEnd& end,
                                          Micros now, const std::function<int64_t()>& backoff_ms);

// Rule 7: every lease that ran out by `now` ends (requeued or failed).
MaintenanceCounts ReapLapsedLeases(Tx& tx, Micros now);

// Rule 6: every queued job whose deadline has come is expired, never leased.
int64_t ExpireDue(Tx& tx, Micros now);

}  // namespace sluice
