#include "client/connection.h"

namespace sluice {

using nlohmann::json;

namespace {

// What a transport error means to someone at a terminal.
std::string Describe(httplib::Error e) {
  switch (e) {
    case httplib::Error::Connection:
      return "connection failed (is sluiced running there?)";
    case httplib::Error::ConnectionTimeout:
      return "connection timed out";
    case httplib::Error::Read:
      return "no answer (the connection closed or the read timed out)";
    case httplib::Error::Write:
      return "the request could not be sent";
    case httplib::Error::Canceled:
      return "the request was interrupted";
    case httplib::Error::SSLConnection:
    case httplib::Error::SSLLoadingCerts:
    case httplib::Error::SSLServerVerification:
      return "TLS failed (" + httplib::to_string(e) + ")";
    default:
      return httplib::to_string(e);
  }
}

}  // namespace

std::string ApiAnswer::header(const std::string& name) const {
  auto it = headers.find(name);
  return it == headers.end() ? "" : it->second;
}

Error ToError(const ApiFailure& failure) {
  switch (failure.kind) {
    case ApiFailure::Kind::kRefused:
      return ToError(failure.problem);
    case ApiFailure::Kind::kUnreachable:
      return MakeError(ErrorCode::kStorageUnavailable, failure.problem.detail);
    case ApiFailure::Kind::kBadAnswer:
      break;
  }
  return MakeError(ErrorCode::kInternal, failure.problem.detail);
}

Connection::Connection(const ServerUrl& server, std::string_view token, ConnectionOptions options)
    : server_(server.ToString()), http_(server_) {
  http_.set_tcp_nodelay(true);  // NOTES.md pitfall 1
  http_.set_keep_alive(true);
  http_.set_connection_timeout(options.connect_timeout_s, 0);
  http_.set_read_timeout(options.read_timeout_s, 0);
  http_.set_write_timeout(options.write_timeout_s, 0);
  if (!token.empty()) http_.set_bearer_token_auth(std::string(token));
}

ApiResult Connection::Finish(const httplib::Result& res) {
  if (!res) {
    ApiFailure f;
    f.kind = ApiFailure::Kind::kUnreachable;
    f.problem.detail = "cannot reach " + server_ + ": " + Describe(res.error());
    return f;
  }
  if (res->status < 200 || res->status >= 300) {
    return ApiFailure{ApiFailure::Kind::kRefused,
                      ParseProblem(res->status, res->body, res->get_header_value("Retry-After"))};
  }
  ApiAnswer a;
  a.status = res->status;
  a.headers = res->headers;
  if (!res->body.empty()) {
    a.body = json::parse(res->body, nullptr, false);
    if (a.body.is_discarded()) {
      ApiFailure f;
      f.kind = ApiFailure::Kind::kBadAnswer;
      f.problem.status = res->status;
      f.problem.detail =
          "the server answered HTTP " + std::to_string(res->status) + " but not with JSON";
      return f;
    }
  }
  return a;
}

ApiResult Connection::Get(const std::string& path, const httplib::Params& params) {
  return Finish(http_.Get(path, params, httplib::Headers{}));
}

ApiResult Connection::Post(const std::string& path, const json& body,
                           const httplib::Headers& headers) {
  return Finish(http_.Post(path, headers, body.dump(-1, ' ', false, json::error_handler_t::replace),
                           "application/json"));
}

ApiResult Connection::Delete(const std::string& path) { return Finish(http_.Delete(path)); }

}  // namespace sluice
