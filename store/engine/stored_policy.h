// Queue rows as the engine reads them: the stored policy text parsed (and the parse
// remembered, since it happens on every submit and every release) into a QueueInfo.
#pragma once

#include <optional>
#include <string>

#include "common/error.h"
#include "store/engine/tx.h"
#include "store/store.h"

namespace sluice {

// The policy a queue row stores, or nothing if its text is not a policy (corruption).
std::optional<QueuePolicy> ParseStoredPolicy(const std::string& text);

// The queue of a row; a stored policy that does not parse is internal_error.
Result<QueueInfo> QueueFromRow(const QueueRow& row);

// The queue of a row that must parse: throws std::runtime_error (internal) otherwise.
QueueInfo QueueFromRowOrThrow(const QueueRow& row);

Error UnknownQueue(const std::string& name);

}  // namespace sluice
