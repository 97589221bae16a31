#include "common/random.h"

#include <openssl/rand.h>
#include <pthread.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <limits>
#include <stdexcept>

#include "common/encoding.h"

namespace sluice {
namespace {

// Bumped in a forked child, so that its threads refill instead of repeating bytes
// their parent may also hand out.
std::atomic<uint64_t> fork_generation{0};

void OnFork() { fork_generation.fetch_add(1); }

struct RandomBuffer {
  std::array<unsigned char, 512> bytes;
  size_t used = bytes.size();
  uint64_t generation = 0;

  void Take(unsigned char* out, size_t n) {
    static const bool registered = [] { return pthread_atfork(nullptr, nullptr, &OnFork) == 0; }();
    (void)registered;
    if (generation != fork_generation.load(std::memory_order_relaxed)) {
      used = bytes.size();
      generation = fork_generation.load(std::memory_order_relaxed);
    }
    while (n > 0) {
      if (used == bytes.size()) {
        if (RAND_bytes(bytes.data(), static_cast<int>(bytes.size())) != 1) {
          throw std::runtime_error("RAND_bytes failed");
        }
        used = 0;
      }
      size_t k = std::min(n, bytes.size() - used);
      std::copy_n(bytes.data() + used, k, out);
      // Never hand the same bytes out twice.
      std::fill_n(bytes.data() + used, k, 0);
      used += k;
      out += k;
      n -= k;
    }
  }
};

void AppendRandomHex(std::string& out, size_t bytes) {
  thread_local RandomBuffer buffer;
  unsigned char chunk[64];
  while (bytes > 0) {
    size_t k = std::min(bytes, sizeof chunk);
    buffer.Take(chunk, k);
    AppendHexLower(out, chunk, k);
    bytes -= k;
  }
}

}  // namespace

std::string RandomId(std::string_view prefix, size_t bytes) {
  std::string out(prefix);
  out.reserve(prefix.size() + 2 * bytes);
  AppendRandomHex(out, bytes);
  return out;
}

std::string TimeOrderedId(std::string_view prefix, int64_t micros, size_t bytes) {
  std::string out(prefix);
  out.reserve(prefix.size() + 13 + 2 * bytes);
  const uint64_t t = static_cast<uint64_t>(std::max<int64_t>(0, micros));
  for (int shift = 48; shift >= 0; shift -= 4) out.push_back(HexDigitLower(t >> shift));
  AppendRandomHex(out, bytes);
  return out;
}

std::string NewLeaseId(int64_t seq) {
  std::string out("lse_");
  out.reserve(4 + 16 + 24);
  const uint64_t s = static_cast<uint64_t>(std::max<int64_t>(0, seq));
  for (int shift = 60; shift >= 0; shift -= 4) out.push_back(HexDigitLower(s >> shift));
  AppendRandomHex(out, 12);
  return out;
}

std::optional<int64_t> SeqOfLeaseId(std::string_view lease_id) {
  if (lease_id.size() != 4 + 16 + 24 || lease_id.substr(0, 4) != "lse_") return std::nullopt;
  uint64_t seq = 0;
  for (size_t i = 4; i < lease_id.size(); ++i) {
    const int digit = HexValue(lease_id[i]);
    // Lower-case only, as NewLeaseId writes them.
    if (digit < 0 || HexDigitLower(static_cast<unsigned>(digit)) != lease_id[i]) {
      return std::nullopt;
    }
    if (i < 4 + 16) seq = (seq << 4) | static_cast<uint64_t>(digit);
  }
  if (seq > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
  return static_cast<int64_t>(seq);
}

}  // namespace sluice
