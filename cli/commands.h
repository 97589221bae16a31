// The sluice CLI's commands over the HTTP API. Each sends its request(s), prints the view
// (or, with --json, the server's JSON) to `out` and any refusal to `err`, and returns the
// process exit code. Parsing arguments is main.cc's job; rendering is views.cc's.
// Not thread-safe (it drives one Connection).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "client/connection.h"

namespace sluice::cli {

// The exit codes of `sluice` (docs/cli.md).
enum ExitCode : int {
  kExitOk = 0,
  kExitRefused = 1,      // the server answered with an error (problem+json on stderr)
  kExitUsage = 2,        // bad arguments, options or payload: nothing was sent
  kExitUnreachable = 3,  // no answer from the server (refused, timeout, DNS, TLS)
};

struct Output {
  std::ostream& out;
  std::ostream& err;
  bool json = false;  // print the server's JSON instead of a table
};

struct JobsQuery {
  std::optional<std::string> queue;
  std::optional<std::string> state;
  std::optional<std::string> cursor;
  std::optional<int> limit;  // page size (server default 100, at most 1000)
  bool all = false;          // follow next_cursor to the end
};

struct TokenSpec {
  std::vector<std::string> scopes;  // submit, work, admin
  std::optional<std::string> tenant;
  std::vector<std::string> queues;  // empty: any queue
  bool secret_only = false;         // print only the plaintext (for $(...) in scripts)
};

struct SubmitSpec {
  std::string queue;
  std::optional<nlohmann::json> payload;
  std::optional<int64_t> cost;
  std::optional<int64_t> deadline_in_ms;
  std::optional<std::string> idempotency_key;
  // A 429 (queue_full, rate_limited), a 503 or no answer is tried again up to `retries`
  // times, each no earlier than the server's Retry-After, plus exponential backoff with
  // full jitter (worker/backoff.h); a wait above `max_wait_s` gives up instead. With
  // retries, the job carries an Idempotency-Key (one is made if none is given), so a
  // retry never makes a second job.
  int retries = 3;
  int64_t max_wait_s = 60;
};

class Commands {
 public:
  Commands(Connection& api, Output output) : api_(api), o_(output) {}

  int Queues();
  int Tenants(const std::string& queue);
  int Jobs(const JobsQuery& query);
  int Job(const std::string& id);
  int SetPaused(const std::string& queue, bool paused);
  int CreateToken(const TokenSpec& spec);
  int ListTokens();
  int RevokeToken(const std::string& id);
  int Submit(const SubmitSpec& spec);

 private:
  // Prints the answer: its JSON with --json, else `view(body)`.
  template <typename View>
  int Print(const ApiResult& r, View view);
  // Prints a failure to `err` and returns its exit code.
  int Report(const ApiFailure& f);

  Connection& api_;
  Output o_;
};

}  // namespace sluice::cli
