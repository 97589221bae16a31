// The one grammar of every name and id a client or the config file gives sluice:
// queue names, tenant names, worker ids, Idempotency-Keys, token ids, job ids. Each
// kind is a length range in bytes over a set of ASCII bytes; "." and ".." are never a
// name, and nothing outside printable ASCII is in any set (no control characters, no
// non-ASCII, so nothing ill-formed). Pure; thread-safe.
#pragma once

#include <cstddef>
#include <string_view>

#include "common/error.h"

namespace sluice {

enum class NameKind {
  kQueue,           // 1-64 of A-Z a-z 0-9 . _ -
  kTenant,          // 1-128 of A-Z a-z 0-9 . _ - @ :
  kWorkerId,        // 1-200 of A-Z a-z 0-9 . _ - @ :
  kIdempotencyKey,  // 1-255 of printable ASCII (0x20-0x7E), no space at either end
  kTokenId,         // 1-64 of A-Z a-z 0-9 _ -  (no '.': it ends the id in a token)
  kJobId,           // 1-64 of A-Z a-z 0-9 _ -  (the shape of the ids sluice issues)
};

inline constexpr NameKind kAllNameKinds[] = {NameKind::kQueue,    NameKind::kTenant,
                                             NameKind::kWorkerId, NameKind::kIdempotencyKey,
                                             NameKind::kTokenId,  NameKind::kJobId};

struct NameGrammar {
  std::string_view what;  // "queue name", for messages
  size_t min_bytes;
  size_t max_bytes;
  std::string_view allowed;  // the allowed bytes, as a person reads them
};

const NameGrammar& GrammarOf(NameKind kind);

bool IsValidName(NameKind kind, std::string_view name);

// Ok, or kBadRequest whose detail quotes the name (escaped, valid UTF-8), says what is
// wrong with it and states the grammar, e.g. "queue name '..' is not valid ('.' and
// '..' are not names): a queue name is 1-64 bytes of A-Z a-z 0-9 . _ -".
Status CheckName(NameKind kind, std::string_view name);

}  // namespace sluice
