// SHA-256 against the standard's known answers (FIPS 180-2 examples), from any thread,
// and the constant-time comparison.
#include "common/crypto.h"

#include <catch2/catch.hpp>
#include <string>
#include <thread>
#include <vector>

namespace sluice {
namespace {

TEST_CASE("Sha256Hex gives the standard's digests", "[crypto]") {
  CHECK(Sha256Hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(Sha256Hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(Sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  // The per-thread context is reused: a second digest starts afresh.
  CHECK(Sha256Hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST_CASE("Sha256Hex gives the same digest on every thread", "[crypto]") {
  const std::string want = Sha256Hex("tok_abc.secret");
  std::vector<std::string> got(4);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < got.size(); ++t) {
    threads.emplace_back([&got, t] {
      for (int i = 0; i < 100; ++i) got[t] = Sha256Hex("tok_abc.secret");
    });
  }
  for (std::thread& th : threads) th.join();
  for (const std::string& g : got) CHECK(g == want);
}

TEST_CASE("ConstantTimeEquals compares whole strings", "[crypto]") {
  CHECK(ConstantTimeEquals("abc", "abc"));
  CHECK_FALSE(ConstantTimeEquals("abc", "abd"));
  CHECK_FALSE(ConstantTimeEquals("abc", "abcd"));
  CHECK(ConstantTimeEquals("", ""));
}

}  // namespace
}  // namespace sluice
