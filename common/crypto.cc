#include "common/crypto.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <memory>

#include "common/encoding.h"

namespace sluice {

namespace {

// SHA-256, fetched from its provider once. EVP_sha256() makes EVP_Digest fetch it again
// on every call (a global read lock and a hash-table lookup in OpenSSL 3), which was
// most of the cost of hashing a token: measured with bench/intake.sh's load, 2 % of
// sluiced's CPU, nearly all of it the fetch and the context's allocation.
const EVP_MD* Sha256() {
  static const EVP_MD* const md = [] {
    const EVP_MD* fetched = EVP_MD_fetch(nullptr, "SHA256", nullptr);
    return fetched != nullptr ? fetched : EVP_sha256();
  }();
  return md;
}

struct MdCtxFree {
  void operator()(EVP_MD_CTX* ctx) const { EVP_MD_CTX_free(ctx); }
};

}  // namespace

std::string Sha256Hex(std::string_view data) {
  // One context per thread, reused: a digest no longer allocates one per call.
  thread_local std::unique_ptr<EVP_MD_CTX, MdCtxFree> ctx(EVP_MD_CTX_new());
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (!ctx || EVP_DigestInit_ex2(ctx.get(), Sha256(), nullptr) != 1 ||
      EVP_DigestUpdate(ctx.get(), data.data(), data.size()) != 1 ||
      EVP_DigestFinal_ex(ctx.get(), md, &len) != 1) {
    EVP_Digest(data.data(), data.size(), md, &len, EVP_sha256(), nullptr);  // the slow way
  }
  std::string out;
  AppendHexLower(out, md, len);
  return out;
}

bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace sluice
