// Opaque identifiers from the OS's CSPRNG (OpenSSL RAND_bytes). Thread-safe.
// Random bytes are drawn in blocks into a per-thread buffer (one RAND_bytes call per
// few hundred bytes, not one per id); a forked child never reuses its parent's buffer.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace sluice {

// `prefix` + 2*bytes lowercase hex characters, e.g. RandomId("job_", 10).
std::string RandomId(std::string_view prefix, size_t bytes);

// `prefix` + 13 hex digits of `micros` + 2*bytes random hex: ids that sort by creation
// time, so an index on them grows at its right edge instead of at random pages.
std::string TimeOrderedId(std::string_view prefix, int64_t micros, size_t bytes);

// A lease's id: "lse_", the leased job's seq as 16 hex digits, and 24 random hex digits.
// The seq lets an ack find its job by the table's key, in the page its lease just wrote,
// rather than by a lookup of the job id in an index of every job (at a million jobs, a
// page rarely in the cache). The random part is what makes the lease: an ack must still
// name the job's id and the whole lease id, as stored.
std::string NewLeaseId(int64_t seq);
// The seq in a lease id of that form; nullopt for any other string (a lease id of an
// older version, "lse_" and 24 hex digits, or anything a client made up).
std::optional<int64_t> SeqOfLeaseId(std::string_view lease_id);

}  // namespace sluice
