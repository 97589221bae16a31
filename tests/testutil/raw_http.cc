#include "tests/testutil/raw_http.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>

namespace sluice::testing {
namespace {

using Clock = std::chrono::steady_clock;

class Socket {
 public:
  Socket() : fd_(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {}
  ~Socket() {
    if (fd_ >= 0) ::close(fd_);
  }
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
  int fd() const { return fd_; }

 private:
  int fd_;
};

int RemainingMs(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return left.count() > 0 ? static_cast<int>(left.count()) : 0;
}

bool IEquals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && ::strncasecmp(a.data(), b.data(), a.size()) == 0;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

enum class Parse { kNeedMore, kDone, kMalformed };

// Decodes a chunked body starting at `at`; on kDone, `body` holds it.
Parse DecodeChunked(std::string_view data, size_t at, std::string* body) {
  body->clear();
  for (;;) {
    size_t eol = data.find("\r\n", at);
    if (eol == std::string_view::npos) return Parse::kNeedMore;
    std::string_view size_text = data.substr(at, eol - at);
    size_text = size_text.substr(0, size_text.find(';'));
    size_t size = 0;
    if (Trim(size_text).empty()) return Parse::kMalformed;
    for (char c : Trim(size_text)) {
      int digit = c >= '0' && c <= '9'   ? c - '0'
                  : c >= 'a' && c <= 'f' ? c - 'a' + 10
                  : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                         : -1;
      if (digit < 0 || size > (size_t{1} << 40)) return Parse::kMalformed;
      size = size * 16 + static_cast<size_t>(digit);
    }
    at = eol + 2;
    if (size == 0) {
      // Trailers, if any, end with an empty line.
      size_t end = data.find("\r\n", at);
      while (end != std::string_view::npos && end != at) {
        at = end + 2;
        end = data.find("\r\n", at);
      }
      return end == std::string_view::npos ? Parse::kNeedMore : Parse::kDone;
    }
    if (data.size() < at + size + 2) return Parse::kNeedMore;
    body->append(data.substr(at, size));
    at += size + 2;
  }
}

// Parses one response from `data` into `out` (headers, then body); `head` means no body.
// `closed`: the peer closed, so a body without framing ends here.
Parse ParseResponse(std::string_view data, bool head, bool closed, RawResponse* out,
                    size_t* consumed) {
  size_t end = data.find("\r\n\r\n");
  if (end == std::string_view::npos) return closed ? Parse::kMalformed : Parse::kNeedMore;
  std::string_view head_text = data.substr(0, end);
  size_t eol = head_text.find("\r\n");
  out->status_line = std::string(head_text.substr(0, eol));
  out->headers.clear();
  if (out->status_line.rfind("HTTP/1.", 0) != 0 || out->status_line.size() < 12 ||
      out->status_line[8] != ' ') {
    return Parse::kMalformed;
  }
  out->status = 0;
  for (size_t i = 9; i < 12; ++i) {
    char c = out->status_line[i];
    if (c < '0' || c > '9') return Parse::kMalformed;
    out->status = out->status * 10 + (c - '0');
  }
  while (eol != std::string_view::npos) {
    size_t start = eol + 2;
    eol = head_text.find("\r\n", start);
    std::string_view line = head_text.substr(
        start, eol == std::string_view::npos ? std::string_view::npos : eol - start);
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) return Parse::kMalformed;
    out->headers.emplace_back(std::string(line.substr(0, colon)),
                              std::string(Trim(line.substr(colon + 1))));
  }
  const size_t body_at = end + 4;
  out->body.clear();
  if (head || out->status / 100 == 1 || out->status == 204 || out->status == 304) {
    *consumed = body_at;
    return Parse::kDone;
  }
  if (IEquals(out->Header("Transfer-Encoding"), "chunked")) {
    Parse p = DecodeChunked(data, body_at, &out->body);
    if (p == Parse::kNeedMore && closed) return Parse::kMalformed;
    *consumed = data.size();
    return p;
  }
  if (out->HasHeader("Content-Length")) {
    const std::string text = out->Header("Content-Length");
    size_t length = 0;
    if (text.empty() || text.size() > 15) return Parse::kMalformed;
    for (char c : text) {
      if (c < '0' || c > '9') return Parse::kMalformed;
      length = length * 10 + static_cast<size_t>(c - '0');
    }
    if (data.size() < body_at + length) return closed ? Parse::kMalformed : Parse::kNeedMore;
    out->body = std::string(data.substr(body_at, length));
    *consumed = body_at + length;
    return Parse::kDone;
  }
  if (!closed) return Parse::kNeedMore;
  out->body = std::string(data.substr(body_at));
  *consumed = data.size();
  return Parse::kDone;
}

}  // namespace

std::string RawResponse::Header(std::string_view name) const {
  for (const auto& [n, v] : headers) {
    if (IEquals(n, name)) return v;
  }
  return "";
}

bool RawResponse::HasHeader(std::string_view name) const {
  for (const auto& [n, v] : headers) {
    if (IEquals(n, name)) return true;
  }
  return false;
}

RawResponse RawExchange(int port, std::string_view request, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  RawResponse out;
  Socket s;
  if (s.fd() < 0) {
    out.error = std::string("socket: ") + std::strerror(errno);
    return out;
  }
  int one = 1;
  ::setsockopt(s.fd(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(s.fd(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    out.error = std::string("connect: ") + std::strerror(errno);
    return out;
  }

  // Send everything, unless the server stops reading (it may answer early and close).
  size_t sent = 0;
  while (sent < request.size()) {
    pollfd p{s.fd(), POLLOUT, 0};
    int ready = ::poll(&p, 1, RemainingMs(deadline));
    if (ready <= 0) break;
    ssize_t n =
        ::send(s.fd(), request.data() + sent, request.size() - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (n <= 0) break;
    sent += static_cast<size_t>(n);
  }

  const bool head = request.rfind("HEAD ", 0) == 0;
  std::string data;
  bool closed = false;
  char buf[16384];
  for (;;) {
    size_t consumed = 0;
    Parse p = ParseResponse(data, head, closed, &out, &consumed);
    if (p == Parse::kDone && out.status / 100 == 1) {
      data.erase(0, consumed);  // an interim answer: the real one follows
      out = RawResponse{};
      continue;
    }
    if (p == Parse::kDone) return out;
    if (p == Parse::kMalformed) {
      out.status = 0;
      out.error = data.empty() ? "the connection closed without a response"
                               : "malformed or truncated response: " + data.substr(0, 200);
      return out;
    }
    pollfd pfd{s.fd(), POLLIN, 0};
    int ready = ::poll(&pfd, 1, RemainingMs(deadline));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) {
      out.status = 0;
      out.error = "no complete response within " + std::to_string(timeout.count()) +
                  " ms; got: " + data.substr(0, 200);
      return out;
    }
    ssize_t n = ::recv(s.fd(), buf, sizeof buf, MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (n <= 0) {
      closed = true;  // EOF, or a reset after the answer: parse what arrived
    } else {
      data.append(buf, static_cast<size_t>(n));
    }
  }
}

std::string BuildRequest(std::string_view method, std::string_view target,
                         const std::vector<std::string>& headers, std::string_view body) {
  std::string out;
  out.append(method).append(" ").append(target).append(" HTTP/1.1\r\n");
  out.append("Host: 127.0.0.1\r\nConnection: close\r\n");
  for (const std::string& h : headers) out.append(h).append("\r\n");
  if (!body.empty() || method == "POST" || method == "PUT" || method == "PATCH") {
    out.append("Content-Length: ").append(std::to_string(body.size())).append("\r\n");
  }
  out.append("\r\n").append(body);
  return out;
}

}  // namespace sluice::testing
