// The sluice CLI's HTTP side: one keep-alive connection to sluiced, bearer token attached,
// answers parsed as JSON and refusals parsed as problem+json. The token is kept in memory
// and sent in the Authorization header only: it never appears in a message of this file.
// Not thread-safe (one client per thread, like httplib::Client).
#pragma once

#include <httplib.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <variant>

namespace sluice::cli {

// A server URL: "http://host[:port][/]" or "https://...". No path, query or credentials.
struct ServerUrl {
  std::string scheme;  // "http" or "https"
  std::string host;
  int port = 0;
  std::string ToString() const;  // scheme://host:port
};
// nullopt (with `why` filled) when `text` is not such a URL.
std::optional<ServerUrl> ParseServerUrl(const std::string& text, std::string* why);

// A 2xx answer.
struct ApiAnswer {
  int status = 0;
  nlohmann::json body;  // null when the answer had no body
  httplib::Headers headers;
  std::string header(const std::string& name) const;
};

// Why a request did not get a 2xx answer.
struct ApiFailure {
  enum class Kind {
    kRefused,      // the server answered 4xx/5xx (problem+json when it sent one)
    kUnreachable,  // no answer: connection refused, DNS, TLS, timeout
    kBadAnswer,    // a 2xx whose body is not JSON
  };
  Kind kind = Kind::kRefused;
  int status = 0;                        // HTTP status for kRefused and kBadAnswer
  std::string code;                      // problem+json "error", e.g. "queue_full" ("" if none)
  std::string detail;                    // problem+json "detail", or what went wrong
  std::optional<int64_t> retry_after_s;  // body "retry_after", else the Retry-After header
  std::string estimated_start;           // deadline_unreachable: when the job would start
};

class ApiResult {
 public:
  ApiResult(ApiAnswer a) : v_(std::move(a)) {}   // NOLINT: implicit by design
  ApiResult(ApiFailure f) : v_(std::move(f)) {}  // NOLINT
  bool ok() const { return std::holds_alternative<ApiAnswer>(v_); }
  const ApiAnswer& value() const { return std::get<ApiAnswer>(v_); }
  const ApiFailure& failure() const { return std::get<ApiFailure>(v_); }

 private:
  std::variant<ApiAnswer, ApiFailure> v_;
};

// The problem+json of a refusal (any body: a non-JSON one becomes the detail).
ApiFailure FailureFromResponse(int status, const std::string& body,
                               const std::string& retry_after_header);

class ApiClient {
 public:
  // `token` may be empty (the server then answers 401).
  ApiClient(const ServerUrl& server, const std::string& token);

  ApiResult Get(const std::string& path, const httplib::Params& params = {});
  ApiResult Post(const std::string& path, const nlohmann::json& body,
                 const httplib::Headers& headers = {});
  ApiResult Delete(const std::string& path);

  const std::string& server() const { return server_; }

 private:
  ApiResult Finish(const httplib::Result& res);

  std::string server_;
  httplib::Client http_;
};

}  // namespace sluice::cli
