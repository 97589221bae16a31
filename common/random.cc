#include "common/random.h"

#include <openssl/rand.h>

#include <stdexcept>
#include <vector>

namespace sluice {

std::string RandomId(std::string_view prefix, size_t bytes) {
  std::vector<unsigned char> buf(bytes);
  if (RAND_bytes(buf.data(), static_cast<int>(buf.size())) != 1) {
    throw std::runtime_error("RAND_bytes failed");
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out(prefix);
  out.reserve(prefix.size() + 2 * bytes);
  for (unsigned char b : buf) {
    out.push_back(kHex[b >> 4]);
    out.push_back(kHex[b & 0xf]);
  }
  return out;
}

}  // namespace sluice
