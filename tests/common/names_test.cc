// The grammar of names and ids: each kind's length bounds and allowed bytes, what
// every kind refuses, and messages that quote the name safely.
#include "common/names.h"

#include <catch2/catch.hpp>
#include <string>

#include "common/utf8.h"

namespace sluice {
namespace {

std::string Detail(NameKind kind, std::string_view name) {
  Status st = CheckName(kind, name);
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().code == ErrorCode::kBadRequest);
  CHECK(IsValidUtf8(st.error().detail));
  return st.error().detail;
}

TEST_CASE("names: every kind refuses empty, '.', '..', control and non-ASCII bytes") {
  for (NameKind kind : kAllNameKinds) {
    INFO(GrammarOf(kind).what);
    CHECK_FALSE(IsValidName(kind, ""));
    CHECK_FALSE(IsValidName(kind, "."));
    CHECK_FALSE(IsValidName(kind, ".."));
    if (kind != NameKind::kIdempotencyKey) {
      for (const char* bad : {"a/b", "a\"b", "a b", "a%b"}) CHECK_FALSE(IsValidName(kind, bad));
    }
    for (std::string bad :
         {std::string("a\0b", 3), std::string("a\nb"), std::string("a\tb"), std::string("a\x7F"),
          std::string("\xC3\xA9t\xC3\xA9"), std::string("a\xFF")}) {
      INFO(QuoteForMessage(bad));
      CHECK_FALSE(IsValidName(kind, bad));
      CHECK_FALSE(CheckName(kind, bad).ok());
    }
  }
}

TEST_CASE("names: the length bounds are exact, in bytes") {
  for (NameKind kind : kAllNameKinds) {
    const NameGrammar& g = GrammarOf(kind);
    INFO(g.what);
    CHECK(g.min_bytes == 1);
    CHECK(IsValidName(kind, "a"));
    CHECK(IsValidName(kind, std::string(g.max_bytes, 'a')));
    CHECK_FALSE(IsValidName(kind, std::string(g.max_bytes + 1, 'a')));
  }
  CHECK(GrammarOf(NameKind::kQueue).max_bytes == 64);
  CHECK(GrammarOf(NameKind::kTenant).max_bytes == 128);
  CHECK(GrammarOf(NameKind::kWorkerId).max_bytes == 200);
  CHECK(GrammarOf(NameKind::kIdempotencyKey).max_bytes == 255);
  CHECK(GrammarOf(NameKind::kTokenId).max_bytes == 64);
  CHECK(GrammarOf(NameKind::kJobId).max_bytes == 64);
}

TEST_CASE("names: queue names are A-Z a-z 0-9 . _ -") {
  for (const char* ok : {"report-export", "q", "exports", "a.b", "...", ".hidden", "A_Z-09"}) {
    INFO(ok);
    CHECK(IsValidName(NameKind::kQueue, ok));
  }
  for (const char* bad : {"a b", "a:b", "a@b", "a+b", "a%2e", "a?b", "a#b", "a\\b"}) {
    INFO(bad);
    CHECK_FALSE(IsValidName(NameKind::kQueue, bad));
  }
}

TEST_CASE("names: tenant names and worker ids also take @ and :") {
  for (NameKind kind : {NameKind::kTenant, NameKind::kWorkerId}) {
    INFO(GrammarOf(kind).what);
    for (const char* ok : {"acme", "globex", "t0", "team@acme.com", "org:acme", "build-host-4242",
                           "worker-1", "a_b.c"}) {
      INFO(ok);
      CHECK(IsValidName(kind, ok));
    }
    for (const char* bad : {"a b", "a=b", "a,b", "a+b", "a'b", "a{b}", "a;b"}) {
      INFO(bad);
      CHECK_FALSE(IsValidName(kind, bad));
    }
  }
}

TEST_CASE("names: an Idempotency-Key is printable ASCII without a space at either end") {
  for (const char* ok :
       {"export-2026-11", "k", "sub_0a1b2c", "a b", "\"quoted\"", "~!@#$%^&*()", "k=v;x,y"}) {
    INFO(ok);
    CHECK(IsValidName(NameKind::kIdempotencyKey, ok));
  }
  for (const char* bad : {" k", "k ", " "}) {
    INFO(bad);
    CHECK_FALSE(IsValidName(NameKind::kIdempotencyKey, bad));
  }
}

TEST_CASE("names: token and job ids are A-Z a-z 0-9 _ -, never a '.'") {
  for (NameKind kind : {NameKind::kTokenId, NameKind::kJobId}) {
    INFO(GrammarOf(kind).what);
    for (const char* ok :
         {"tok_ci", "tok_0a1b2c3d4e5f6071", "job_018f2a3b4c5d6e0a1b2c3d4e5f", "x"}) {
      CHECK(IsValidName(kind, ok));
    }
    for (const char* bad : {"tok.ci", "tok ci", "tok:ci", "tok@ci"}) {
      CHECK_FALSE(IsValidName(kind, bad));
    }
  }
}

TEST_CASE("names: the message names the kind, the problem and the grammar, quoted safely") {
  std::string d = Detail(NameKind::kQueue, "..");
  CHECK(d.find("queue name '..'") != std::string::npos);
  CHECK(d.find("'.' and '..' are not names") != std::string::npos);
  CHECK(d.find("1-64 bytes of A-Z a-z 0-9 . _ -") != std::string::npos);

  d = Detail(NameKind::kTenant, std::string(129, 't'));
  CHECK(d.find("129 bytes long") != std::string::npos);
  CHECK(d.find("1-128 bytes") != std::string::npos);

  d = Detail(NameKind::kQueue, "");
  CHECK(d.find("it is empty") != std::string::npos);

  d = Detail(NameKind::kWorkerId, std::string("w\x01\xFF", 3));
  CHECK(d.find("\\x01") != std::string::npos);  // the control byte, escaped
  CHECK(d.find("is not allowed") != std::string::npos);

  d = Detail(NameKind::kIdempotencyKey, "k ");
  CHECK(d.rfind("Idempotency-Key 'k ' is not valid", 0) == 0);
  CHECK(d.find("an Idempotency-Key is 1-255 bytes") != std::string::npos);
}

}  // namespace
}  // namespace sluice
