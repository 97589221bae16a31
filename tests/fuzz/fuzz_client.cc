// Fuzzes what the client library (client/) reads from a server or a user: problem+json
// refusals with their Retry-After header, lease and ack answers, and server URLs.
// Properties: no crash, exception or sanitizer report; a refusal keeps its status and
// maps to an Error (a non-JSON body's detail is at most 500 bytes of it); a Retry-After
// that parses is a non-negative count written in digits only; leased jobs always carry
// an id and a lease id; a server URL that parses prints as one that parses to itself.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "client/problem.h"
#include "client/server_url.h"
#include "client/worker_client.h"
#include "tests/fuzz/fuzz_check.h"

namespace sluice {
namespace {

void CheckProblem(int status, std::string_view body, std::string_view header) {
  const Problem p = ParseProblem(status, body, header);
  FUZZ_CHECK(p.status == status);
  if (!nlohmann::json::parse(body, nullptr, false).is_object()) {
    FUZZ_CHECK(p.detail.size() <= 500 && body.substr(0, p.detail.size()) == p.detail);
  }
  if (p.retry_after_s) FUZZ_CHECK(*p.retry_after_s >= 0);
  const Error e = ToError(p);
  FUZZ_CHECK(e.detail.rfind("HTTP " + std::to_string(status) + ": ", 0) == 0);
  if (status == 503 && !ParseErrorCode(p.code)) FUZZ_CHECK(IsTransient(e));
}

void CheckRetryAfter(std::string_view text) {
  auto v = ParseRetryAfter(text);
  if (!v) return;
  FUZZ_CHECK(*v >= 0 && !text.empty());
  for (char c : text) FUZZ_CHECK(c >= '0' && c <= '9');
}

void CheckAnswers(const nlohmann::json& j) {
  auto jobs = ReadLeasedJobs(j);
  if (jobs.ok()) {
    for (const LeasedJob& job : jobs.value()) {
      FUZZ_CHECK(!job.id.empty() && !job.lease_id.empty());
      (void)job.LeaseMs();
    }
  } else {
    FUZZ_CHECK(jobs.error().code == ErrorCode::kInternal);
  }
  const size_t n = j.is_array() ? j.size() : 1;
  auto acks = ReadAckResults(j, n);
  if (acks.ok()) FUZZ_CHECK(acks.value().size() == n);
}

void CheckServerUrl(const std::string& text) {
  std::string why;
  auto url = ParseServerUrl(text, &why);
  if (!url) {
    FUZZ_CHECK(!why.empty());
    return;
  }
  FUZZ_CHECK(url->port >= 1 && url->port <= 65535);
  auto again = ParseServerUrl(url->ToString(), &why);
  FUZZ_CHECK(again && again->ToString() == url->ToString());
}

}  // namespace
}  // namespace sluice

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text = sluice::fuzz::AsText(data, size);
  // The first two bytes pick a status (100-599) for the rest as a body.
  const int status = size >= 2 ? 100 + (data[0] * 256 + data[1]) % 500 : 503;
  const std::string_view body = size >= 2 ? text.substr(2) : text;
  sluice::CheckProblem(status, body, body);
  sluice::CheckRetryAfter(text);
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_discarded()) sluice::CheckAnswers(j);
  sluice::CheckServerUrl(std::string(text));
  return 0;
}
