// How a token's scopes and queue list are stored, as JSON text, by every driver.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "store/store.h"

namespace sluice {

std::string ScopesToJson(const std::vector<Scope>& scopes);
std::vector<Scope> ScopesFromJson(const std::string& text);  // unknown names are skipped
std::optional<std::string> QueuesToJson(const std::optional<std::vector<std::string>>& queues);
std::optional<std::vector<std::string>> QueuesFromJson(const std::optional<std::string>& text);

}  // namespace sluice
