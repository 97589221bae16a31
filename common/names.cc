#include "common/names.h"

#include <string>

#include "common/utf8.h"

namespace sluice {
namespace {

bool AlphaNum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

bool Allowed(NameKind kind, char c) {
  switch (kind) {
    case NameKind::kQueue:
      return AlphaNum(c) || c == '.' || c == '_' || c == '-';
    case NameKind::kTenant:
    case NameKind::kWorkerId:
      return AlphaNum(c) || c == '.' || c == '_' || c == '-' || c == '@' || c == ':';
    case NameKind::kIdempotencyKey:
      return c >= 0x20 && c <= 0x7E;
    case NameKind::kTokenId:
    case NameKind::kJobId:
      return AlphaNum(c) || c == '_' || c == '-';
  }
  return false;
}

constexpr NameGrammar kQueue{"queue name", 1, 64, "A-Z a-z 0-9 . _ -"};
constexpr NameGrammar kTenant{"tenant name", 1, 128, "A-Z a-z 0-9 . _ - @ :"};
constexpr NameGrammar kWorkerId{"worker id", 1, 200, "A-Z a-z 0-9 . _ - @ :"};
constexpr NameGrammar kIdempotencyKey{"Idempotency-Key", 1, 255,
                                      "printable ASCII, without a space at either end"};
constexpr NameGrammar kTokenId{"token id", 1, 64, "A-Z a-z 0-9 _ -"};
constexpr NameGrammar kJobId{"job id", 1, 64, "A-Z a-z 0-9 _ -"};

// What is wrong with `name`, or "" when nothing is.
std::string Problem(NameKind kind, std::string_view name) {
  const NameGrammar& g = GrammarOf(kind);
  if (name.empty()) return "it is empty";
  if (name.size() > g.max_bytes) {
    return "it is " + std::to_string(name.size()) + " bytes long";
  }
  if (name.size() < g.min_bytes) {
    return "it is shorter than " + std::to_string(g.min_bytes) + " bytes";
  }
  if (name == "." || name == "..") return "'.' and '..' are not names";
  for (char c : name) {
    if (!Allowed(kind, c)) {
      return QuoteForMessage(std::string_view(&c, 1)) + " is not allowed";
    }
  }
  if (kind == NameKind::kIdempotencyKey && (name.front() == ' ' || name.back() == ' ')) {
    return "it starts or ends with a space";
  }
  return "";
}

}  // namespace

const NameGrammar& GrammarOf(NameKind kind) {
  switch (kind) {
    case NameKind::kQueue:
      return kQueue;
    case NameKind::kTenant:
      return kTenant;
    case NameKind::kWorkerId:
      return kWorkerId;
    case NameKind::kIdempotencyKey:
      return kIdempotencyKey;
    case NameKind::kTokenId:
      return kTokenId;
    case NameKind::kJobId:
      return kJobId;
  }
  return kQueue;
}

bool IsValidName(NameKind kind, std::string_view name) { return Problem(kind, name).empty(); }

Status CheckName(NameKind kind, std::string_view name) {
  const std::string problem = Problem(kind, name);
  if (problem.empty()) return Ok{};
  const NameGrammar& g = GrammarOf(kind);
  return MakeError(ErrorCode::kBadRequest,
                   std::string(g.what) + " " + QuoteForMessage(name) + " is not valid (" + problem +
                       "): " + (g.what.front() == 'I' ? "an " : "a ") + std::string(g.what) +
                       " is " + std::to_string(g.min_bytes) + "-" + std::to_string(g.max_bytes) +
                       " bytes of " + std::string(g.allowed) + ", and not . or ..");
}

}  // namespace sluice
