#include "cli/api_client.h"

#include <charconv>
#include <regex>

namespace sluice::cli {

using nlohmann::json;

namespace {

std::optional<int64_t> ParseSeconds(const std::string& s) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

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
    case httplib::Error::SSLConnection:
    case httplib::Error::SSLLoadingCerts:
    case httplib::Error::SSLServerVerification:
      return "TLS failed (" + httplib::to_string(e) + ")";
    default:
      return httplib::to_string(e);
  }
}

}  // namespace

std::string ServerUrl::ToString() const {
  bool bracket = host.find(':') != std::string::npos;  // an IPv6 literal
  return scheme + "://" + (bracket ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

std::optional<ServerUrl> ParseServerUrl(const std::string& text, std::string* why) {
  static const std::regex kUrl(
      R"(^(https?)://(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)(:(\d{1,5}))?/?$)");
  std::smatch m;
  if (!std::regex_match(text, m, kUrl)) {
    *why = "the server URL must look like http://HOST[:PORT] (no path, no credentials)";
    return std::nullopt;
  }
  ServerUrl url;
  url.scheme = m[1];
  url.host = m[2];
  if (url.host.front() == '[') url.host = url.host.substr(1, url.host.size() - 2);
  url.port = url.scheme == "https" ? 443 : 80;
  if (m[4].matched) url.port = std::stoi(m[4]);
  if (url.port < 1 || url.port > 65535) {
    *why = "the server URL's port must be 1-65535";
    return std::nullopt;
  }
  return url;
}

std::string ApiAnswer::header(const std::string& name) const {
  auto it = headers.find(name);
  return it == headers.end() ? "" : it->second;
}

ApiFailure FailureFromResponse(int status, const std::string& body,
                               const std::string& retry_after_header) {
  ApiFailure f;
  f.kind = ApiFailure::Kind::kRefused;
  f.status = status;
  json j = json::parse(body, nullptr, false);
  if (j.is_object()) {
    if (j.contains("error") && j["error"].is_string()) f.code = j["error"];
    if (j.contains("detail") && j["detail"].is_string()) f.detail = j["detail"];
    if (j.contains("retry_after") && j["retry_after"].is_number_integer()) {
      f.retry_after_s = j["retry_after"].get<int64_t>();
    }
    if (j.contains("estimated_start") && j["estimated_start"].is_string()) {
      f.estimated_start = j["estimated_start"];
    }
  } else {
    f.detail = body.substr(0, 500);
  }
  if (!f.retry_after_s) f.retry_after_s = ParseSeconds(retry_after_header);
  return f;
}

ApiClient::ApiClient(const ServerUrl& server, const std::string& token)
    : server_(server.ToString()), http_(server_) {
  http_.set_tcp_nodelay(true);  // NOTES.md pitfall 1
  http_.set_keep_alive(true);
  http_.set_connection_timeout(5, 0);
  http_.set_read_timeout(30, 0);
  http_.set_write_timeout(10, 0);
  if (!token.empty()) http_.set_bearer_token_auth(token);
}

ApiResult ApiClient::Finish(const httplib::Result& res) {
  if (!res) {
    ApiFailure f;
    f.kind = ApiFailure::Kind::kUnreachable;
    f.detail = "cannot reach " + server_ + ": " + Describe(res.error());
    return f;
  }
  if (res->status < 200 || res->status >= 300) {
    return FailureFromResponse(res->status, res->body, res->get_header_value("Retry-After"));
  }
  ApiAnswer a;
  a.status = res->status;
  a.headers = res->headers;
  if (!res->body.empty()) {
    a.body = json::parse(res->body, nullptr, false);
    if (a.body.is_discarded()) {
      ApiFailure f;
      f.kind = ApiFailure::Kind::kBadAnswer;
      f.status = res->status;
      f.detail = "the server answered HTTP " + std::to_string(res->status) + " but not with JSON";
      return f;
    }
  }
  return a;
}

ApiResult ApiClient::Get(const std::string& path, const httplib::Params& params) {
  return Finish(http_.Get(path, params, httplib::Headers{}));
}

ApiResult ApiClient::Post(const std::string& path, const json& body,
                          const httplib::Headers& headers) {
  return Finish(http_.Post(path, headers, body.dump(-1, ' ', false, json::error_handler_t::replace),
                           "application/json"));
}

ApiResult ApiClient::Delete(const std::string& path) { return Finish(http_.Delete(path)); }

}  // namespace sluice::cli
