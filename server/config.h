// The optional config file (--config): queues declared at start. Applying it is
// idempotent: a queue whose stored policy already equals the file's is left alone,
// so restarts do not bump policy versions.
#pragma once

#include <map>
#include <string>

#include "common/error.h"
#include "shaper/policy.h"
#include "store/store.h"

namespace sluice {

struct Config {
  std::map<std::string, QueuePolicy> queues;
};

Result<Config> LoadConfig(const std::string& path);

// Creates or updates the declared queues. Returns how many were written.
Result<int> ApplyConfig(const Config& config, Store& store, Micros now);

}  // namespace sluice
