// One keep-alive HTTP connection to sluiced, the client library's transport: bearer
// token attached, 2xx answers parsed as JSON, refusals as problem+json (client/problem.h),
// transport failures described for a person. The token is kept in memory and sent in
// the Authorization header only: it never appears in a message of this file.
// Not thread-safe (one Connection per thread, like httplib::Client), except Interrupt().
#pragma once

#include <httplib.h>

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <variant>

#include "client/problem.h"
#include "client/server_url.h"
#include "common/error.h"

namespace sluice {

// A 2xx answer.
struct ApiAnswer {
  int status = 0;
  nlohmann::json body;  // null when the answer had no body
  httplib::Headers headers;
  std::string header(const std::string& name) const;  // "" when absent
};

// Why a request did not get a 2xx answer.
struct ApiFailure {
  enum class Kind {
    kRefused,      // the server answered 4xx/5xx: `problem` is what it said
    kUnreachable,  // no answer: connection refused, DNS, TLS, timeout, Interrupt()
    kBadAnswer,    // a 2xx whose body is not JSON
  };
  Kind kind = Kind::kRefused;
  Problem problem;  // status and detail always; the rest for kRefused
};

// The Error a failure means: kRefused as ToError(problem); kUnreachable as
// kStorageUnavailable (transient: the request may not have been applied); kBadAnswer
// as kInternal.
Error ToError(const ApiFailure& failure);

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

struct ConnectionOptions {
  int connect_timeout_s = 5;
  int read_timeout_s = 30;  // a worker's must outlast its long-polls
  int write_timeout_s = 10;
};

class Connection {
 public:
  // `token` may be empty (the server then answers 401 where one is needed).
  Connection(const ServerUrl& server, std::string_view token, ConnectionOptions options = {});

  ApiResult Get(const std::string& path, const httplib::Params& params = {});
  // The body is sent as JSON (invalid UTF-8 in its strings replaced).
  ApiResult Post(const std::string& path, const nlohmann::json& body,
                 const httplib::Headers& headers = {});
  ApiResult Delete(const std::string& path);

  // Aborts the request in flight (e.g. a long-poll) from another thread; it comes back
  // kUnreachable. Later requests reconnect.
  void Interrupt() { http_.stop(); }

  const std::string& server() const { return server_; }

 private:
  ApiResult Finish(const httplib::Result& res);

  std::string server_;
  httplib::Client http_;
};

}  // namespace sluice
