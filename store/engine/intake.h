// Admission of submitted jobs, many in one transaction: the rules of a submit (queue,
// idempotency, the shaper's admission decision, the stored job) applied to each job in
// order, as if each were submitted alone after the ones before it. Each job has its own
// outcome; one job's refusal writes nothing and changes nothing for the others.
#pragma once

#include <vector>

#include "store/engine/tx.h"
#include "store/store.h"

namespace sluice {

// Admits `jobs` inside `tx`: per queue (in name order), the admission locks of the
// buckets the jobs fall in (in tenant order), then the decision time (read once every
// lock is held), then the decisions in submission order, then the writes: one counter
// change per bucket, one insert of every admitted job. Driver errors are thrown, as
// every Tx method throws them. The outcomes are parallel to `jobs`.
std::vector<Result<SubmitOutcome>> AdmitAll(Tx& tx, const std::vector<NewJob>& jobs,
                                            Micros caller_now);

}  // namespace sluice
