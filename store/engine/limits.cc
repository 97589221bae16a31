#include "store/engine/limits.h"

#include <algorithm>
#include <map>
#include <string>

namespace sluice {
namespace {

// How long a concurrency key's row is kept after its last acquire or release: the
// longest a request may hold a slot. Slots held by an instance that died are given back
// then (a row past it reads as a new key's, and the cleaner deletes it).
constexpr Micros kConcurrencyHold = 5 * 60 * kMicrosPerSecond;

struct KeyState {
  const Limit* limit = nullptr;  // the first ask's: the one its stored state is read with
  LimiterState state;
  bool changed = false;
  Micros expires_at = 0;  // of the last admitted decision
};

}  // namespace

std::vector<LimitsOutcome> DecideLimitBatch(Tx& tx, const std::vector<LimitRequest>& requests) {
  // Every distinct key, locked once, in sorted order (invariant 1). A key without a row
  // gets one first (nothing spent, already expired), so that it can be locked: another
  // process may be making it at the same moment.
  std::map<std::string, KeyState> keys;
  for (const LimitRequest& r : requests) {
    for (const LimitAsk& ask : *r.asks) {
      auto [it, made] = keys.try_emplace(ask.key);
      if (made) it->second.limit = &ask.limit;
    }
  }
  for (auto& [key, ks] : keys) {
    std::optional<StoredLimit> stored = tx.LockLimit(key);
    const Micros now = tx.Now(requests.front().now);
    if (!stored) {
      tx.InsertLimit(key, EncodeState(InitialState(*ks.limit)), now);
      stored = tx.LockLimit(key);
    }
    ks.state = stored && stored->expires_at > now ? DecodeState(*ks.limit, stored->state)
                                                  : InitialState(*ks.limit);
  }

  std::vector<LimitsOutcome> out(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    const std::vector<LimitAsk>& asks = *requests[i].asks;
    const Micros now = tx.Now(requests[i].now);
    std::vector<LimitStep> steps;
    steps.reserve(asks.size());
    for (const LimitAsk& ask : asks) {
      // Against the state the earlier layers of this request left (one key may appear
      // in two layers only if they share a name, which ReadLayers refuses).
      LimitStep step = Decide(ask.limit, keys.at(ask.key).state, now, ask.cost);
      LimitOutcome o{step.decision, std::nullopt};
      const LimitDecision next = Decide(ask.limit, step.state, now, 1).decision;
      o.next_unit_after = next.allowed ? std::optional<Micros>(0) : next.retry_after;
      out[i].outcomes.push_back(o);
      steps.push_back(std::move(step));
      if (!o.decision.allowed) {
        out[i].allowed = false;
        break;
      }
    }
    if (!out[i].allowed) continue;  // invariant 2: nothing of it is kept
    for (size_t k = 0; k < asks.size(); ++k) {
      KeyState& ks = keys.at(asks[k].key);
      ks.state = std::move(steps[k].state);
      ks.changed = true;
      ks.expires_at = ClampTime(now + steps[k].decision.reset_after.value_or(kConcurrencyHold));
    }
  }
  for (const auto& [key, ks] : keys) {
    if (ks.changed) tx.UpdateLimit(key, EncodeState(ks.state), ks.expires_at);
  }
  return out;
}

void ReleaseLimits(Tx& tx, const std::vector<LimitAsk>& asks, Micros caller_now) {
  std::vector<const LimitAsk*> sorted;  // invariant 1
  for (const LimitAsk& ask : asks) sorted.push_back(&ask);
  std::sort(sorted.begin(), sorted.end(),
            [](const LimitAsk* a, const LimitAsk* b) { return a->key < b->key; });
  for (const LimitAsk* a : sorted) {
    const LimitAsk& ask = *a;
    const std::optional<StoredLimit> stored = tx.LockLimit(ask.key);
    const Micros now = tx.Now(caller_now);
    if (!stored || stored->expires_at <= now) continue;  // forgotten already
    const LimiterState state = Release(ask.limit, DecodeState(ask.limit, stored->state), ask.cost);
    tx.UpdateLimit(ask.key, EncodeState(state), ClampTime(now + kConcurrencyHold));
  }
}

}  // namespace sluice
