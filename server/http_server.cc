#include "server/http_server.h"

// clang-format off
#include <utility>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
// clang-format on
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <limits>
#include <optional>
#include <thread>
#include <vector>

#include "common/random.h"
#include "common/utf8.h"
#include "server/log.h"
#include "server/request_reader.h"
#include "server/wire_response.h"

namespace sluice {

namespace beast = boost::beast;
namespace http = beast::http;
using tcp = boost::asio::ip::tcp;
// A connection's socket runs on its own strand, named by type rather than erased into
// any_io_executor: each asynchronous operation then dispatches through the strand
// directly, without the type-erased executor's copies and reference counts.
using Strand = boost::asio::strand<boost::asio::io_context::executor_type>;
using Socket = tcp::socket::rebind_executor<Strand>::other;

namespace {

// Logs the exception being handled (call only inside a catch block): a bug, since
// errors travel as values; the request is answered 500 by the caller.
void LogCaughtException(std::string_view request_id, std::string_view where) {
  std::string what = "not a std::exception";
  try {
    throw;
  } catch (const std::exception& e) {
    what = e.what();
  } catch (...) {
  }
  LogEvent(spdlog::level::err, "internal_error",
           {{"request_id", request_id}, {"where", where}, {"detail", what}});
}

constexpr int64_t kNoDeadline = std::numeric_limits<int64_t>::max();

int64_t SteadyNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

// One keep-alive connection. Every member is touched only on the connection's strand,
// except where a method says "any thread".
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(HttpServer& server, Socket socket, uint64_t id)
      : server_(server), socket_(std::move(socket)), id_(id) {
    beast::error_code ec;
    auto remote = socket_.remote_endpoint(ec);
    if (!ec) remote_addr_ = remote.address().to_string();
    // The peer is the same for every request of the connection: resolved once, and only
    // a trusted proxy's requests read a forwarding header.
    const TrustedProxies& proxies = server_.options_.trusted_proxies;
    peer_client_ = ResolveClientIp(remote_addr_, {}, proxies);
    const auto peer = ParseAddress(remote_addr_);
    peer_trusted_ = peer && proxies.Contains(*peer);
  }
  ~Session() {
    EndGate();
    server_.Forget(id_);
  }

  // Gives back what the gate's decision holds (a concurrency slot), once.
  void EndGate() {
    if (!on_end_) return;
    auto end = std::move(on_end_);
    on_end_ = nullptr;
    end();
  }

  void Start() {
    boost::asio::dispatch(socket_.get_executor(),
                          [self = shared_from_this()] { self->ReadNext(); });
  }

  // Any thread.
  void Send(HttpResponse res) {
    boost::asio::dispatch(socket_.get_executor(),
                          [self = shared_from_this(), res = std::move(res)]() mutable {
                            self->Write(std::move(res));
                          });
  }

  // Any thread but this connection's strand: `fill` runs on the strand, at once if the
  // caller runs on an I/O thread and the strand is free (a completion: no extra hop
  // through the scheduler), else queued to it.
  void Later(std::function<void(HttpResponse&)> fill) {
    boost::asio::dispatch(
        socket_.get_executor(), [self = shared_from_this(), fill = std::move(fill)] {
          HttpResponse res;
          try {
            fill(res);
          } catch (...) {
            LogCaughtException(self->req_.request_id, "rendering a completion");
            res = self->ErrorResponse(MakeError(ErrorCode::kInternal, "internal error"));
          }
          self->Write(std::move(res));
        });
  }

  // Any thread: closes the connection now if no request is in progress.
  void CloseIfIdle() {
    boost::asio::dispatch(socket_.get_executor(), [self = shared_from_this()] {
      if (!self->busy_) self->Close();
    });
  }

  // Any thread (the server's sweep): closes the connection if the read or write it
  // waits for is past its deadline; the pending operation then ends with an error.
  bool Overdue(int64_t now_ns) const { return deadline_.load(std::memory_order_relaxed) <= now_ns; }
  void CloseIfOverdue() {
    boost::asio::dispatch(socket_.get_executor(), [self = shared_from_this()] {
      if (self->Overdue(SteadyNanos())) self->Close();
    });
  }

  // Any thread: whether the peer has closed its side (seen while a request waits).
  bool PeerGone() const { return peer_gone_.load(std::memory_order_relaxed); }

  HttpResponse ErrorResponse(const Error& e) const {
    HttpResponse res;
    server_.on_error_(e, res);
    return res;
  }

 private:
  // The next read or write must end within `d`, or the sweep closes the connection.
  // (One deadline per connection, checked a few times a second, rather than a timer
  // armed and cancelled around every operation: that was 6 % of a submit's CPU.)
  void ExpiresAfter(std::chrono::steady_clock::duration d) {
    deadline_.store(SteadyNanos() + std::chrono::duration_cast<std::chrono::nanoseconds>(d).count(),
                    std::memory_order_relaxed);
  }

  void ReadNext() {
    if (server_.stopping_) return Close();
    parser_.emplace();
    parser_->body_limit(server_.options_.max_body_bytes);
    parser_->header_limit(static_cast<uint32_t>(server_.options_.max_header_bytes));
    ExpiresAfter(server_.options_.keep_alive_timeout);
    http::async_read_header(
        socket_, buffer_, *parser_,
        [self = shared_from_this()](beast::error_code ec, size_t) { self->OnHeader(ec); });
  }

  void OnHeader(beast::error_code ec) {
    if (ec) return ReadFailed(ec);
    if (beast::iequals(parser_->get()[http::field::expect], "100-continue")) {
      static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
      ExpiresAfter(server_.options_.io_timeout);
      boost::asio::async_write(socket_, boost::asio::buffer(kContinue.data(), kContinue.size()),
                               [self = shared_from_this()](beast::error_code wec, size_t) {
                                 if (wec) return self->Close();
                                 self->ReadBody();
                               });
      return;
    }
    ReadBody();
  }

  void ReadBody() {
    if (parser_->is_done()) return Handle();
    // A small request's body usually came with its header: parse what is buffered now,
    // rather than through another asynchronous read (a hop through the scheduler) that
    // would find it there.
    if (buffer_.size() > 0) {
      beast::error_code ec;
      buffer_.consume(parser_->put(buffer_.data(), ec));
      if (ec && ec != http::error::need_more) return ReadFailed(ec);
      if (parser_->is_done()) return Handle();
    }
    ExpiresAfter(server_.options_.io_timeout);
    http::async_read(socket_, buffer_, *parser_,
                     [self = shared_from_this()](beast::error_code ec, size_t) {
                       if (ec) return self->ReadFailed(ec);
                       self->Handle();
                     });
  }

  // A request could not be read: answer what can be answered, then close.
  void ReadFailed(beast::error_code ec) {
    std::optional<Error> e = TransportError(ec, server_.options_.max_body_bytes);
    if (!e) return Close();  // the peer went away, timed out, or we are stopping
    WriteError(*e);
  }

  // Answers a request the transport refused (framing, limits) like any other: with a
  // request id, an access-log line and a metrics sample, then closes the connection.
  void WriteError(const Error& e) {
    keep_alive_ = false;
    busy_ = true;
    req_ = HttpRequest{};
    if (parser_ && parser_->is_header_done()) ReadRefusedRequest(parser_->get(), req_);
    BeginRequest();
    Write(ErrorResponse(e));
  }

  // req_.client_ip and client_key: the peer, or, if it is a trusted proxy, the client
  // its forwarding header names.
  void ResolveClient() {
    if (!peer_trusted_) {
      req_.client_ip = peer_client_.address;
      req_.client_key = peer_client_.key;
      return;
    }
    const TrustedProxies& proxies = server_.options_.trusted_proxies;
    const std::string_view name = proxies.header() == ForwardedHeader::kForwarded
                                      ? std::string_view("Forwarded")
                                      : std::string_view("X-Forwarded-For");
    std::vector<std::string_view> forwarded;
    for (const auto& [k, v] : req_.headers) {
      if (beast::iequals(beast::string_view(k.data(), k.size()),
                         beast::string_view(name.data(), name.size()))) {
        forwarded.emplace_back(v);
      }
    }
    ClientIp client = ResolveClientIp(remote_addr_, forwarded, proxies);
    req_.client_ip = std::move(client.address);
    req_.client_key = std::move(client.key);
  }

  // Starts the bookkeeping of one answered request (req_ filled as far as known).
  void BeginRequest() {
    req_.remote_addr = remote_addr_;
    ResolveClient();
    req_.request_id = RequestId(req_.get_header_value("X-Request-Id"));
    started_ = std::chrono::steady_clock::now();
    route_.clear();
    head_ = req_.method == "HEAD";
    in_request_ = true;
  }

  void Handle() {
    auto& msg = parser_->get();
    keep_alive_ = msg.keep_alive();
    busy_ = true;
    work_.emplace(server_.io_.get_executor());  // Run() waits for this answer
    deadline_.store(kNoDeadline, std::memory_order_relaxed);
    req_ = HttpRequest{};
    Status read = ReadRequest(msg, req_);
    BeginRequest();
    Routing([&] {
      if (!read.ok()) return Write(ErrorResponse(read.error()));
      Route();
    });
  }

  // Nothing thrown on the I/O thread may escape into io_context::run() (it would end
  // the process): anything before the hand-off to a handler is answered 500 here.
  template <typename F>
  void Routing(F&& step) {
    try {
      step();
    } catch (...) {
      LogCaughtException(req_.request_id, "routing");
      if (in_request_ && !handed_off_) {
        Write(ErrorResponse(MakeError(ErrorCode::kInternal, "internal error")));
      }
    }
  }

  void Route() {
    handed_off_ = false;
    if (server_.options_.admit) {
      if (std::optional<Error> refused = server_.options_.admit(req_)) {
        return Write(ErrorResponse(*refused));
      }
    }
    const Router::Route* route = nullptr;
    std::vector<std::string> captures;
    std::vector<std::string> allowed;
    switch (server_.router_.Find(req_.method, req_.path, &route, &captures, &allowed)) {
      case Router::Found::kNoPath:
        return Write(ErrorResponse(MakeError(ErrorCode::kNotFound, "no such resource")));
      case Router::Found::kWrongMethod: {
        std::string allow;
        for (const std::string& m : allowed) allow += (allow.empty() ? "" : ", ") + m;
        HttpResponse res = ErrorResponse(MakeError(
            ErrorCode::kMethodNotAllowed, QuoteForMessage(req_.method) + " is not allowed on " +
                                              QuoteForMessage(req_.path) + "; allowed: " + allow));
        res.set_header("Allow", allow);
        return Write(std::move(res));
      }
      case Router::Found::kRoute:
        break;
    }
    if (Status ok = CheckCaptures(captures); !ok.ok()) return Write(ErrorResponse(ok.error()));
    route_ = route->pattern;
    req_.matches.reserve(captures.size() + 1);
    req_.matches.push_back(req_.path);
    for (auto& c : captures) req_.matches.push_back(std::move(c));

    if (server_.options_.gate) {
      std::optional<GateResult> now = server_.options_.gate(
          req_, route->group, [self = shared_from_this(), route](GateResult r) {
            boost::asio::post(self->socket_.get_executor(),
                              [self, route, r = std::move(r)]() mutable {
                                self->Routing([&] { self->Pass(route, std::move(r)); });
                              });
          });
      if (!now) return;  // Pass runs when the gate has decided
      return Pass(route, std::move(*now));
    }
    Dispatch(route);
  }

  // The gate's decision: refused, or on to the handler.
  void Pass(const Router::Route* route, GateResult r) {
    gate_headers_ = std::move(r.headers);
    on_end_ = std::move(r.on_end);
    if (r.refused) return Write(ErrorResponse(*r.refused));
    Dispatch(route);
  }

  void Dispatch(const Router::Route* route) {
    handed_off_ = true;
    if (route->async_handler) {
      if (route->long_poll) WatchPeer();
      try {
        route->async_handler(req_, Reply(shared_from_this()));
      } catch (...) {
        // The handler's Reply, if unanswered, answers 500 as it goes.
        LogCaughtException(req_.request_id, route_);
      }
      return;
    }
    boost::asio::post(server_.handlers_, [self = shared_from_this(), route] {
      HttpResponse res;
      try {
        route->handler(self->req_, res);
      } catch (...) {
        LogCaughtException(self->req_.request_id, route->pattern);
        res = self->ErrorResponse(MakeError(ErrorCode::kInternal, "internal error"));
      }
      self->Send(std::move(res));
    });
  }

  // While an asynchronous handler works (a long-poll may wait for many seconds), notices
  // a peer that hangs up, so that work meant for it can go to someone else.
  void WatchPeer() {
    socket_.async_wait(tcp::socket::wait_read, [self = shared_from_this()](beast::error_code ec) {
      if (ec) return;
      char c;
      ssize_t n = ::recv(self->socket_.native_handle(), &c, 1, MSG_PEEK | MSG_DONTWAIT);
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) {
        self->peer_gone_ = true;
      }
    });
  }

  // The client's id if it is short and plain, else ours: "<process>-<counter>".
  std::string RequestId(const std::string& given) {
    if (!given.empty() && given.size() <= 64 && std::all_of(given.begin(), given.end(), [](char c) {
          return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
        })) {
      return given;
    }
    char buf[24] = {'-'};
    const auto n = static_cast<unsigned long long>(server_.request_counter_.fetch_add(1) + 1);
    char* end = std::to_chars(buf + 1, buf + sizeof buf, n, 16).ptr;
    std::string id;
    id.reserve(server_.id_prefix_.size() + static_cast<size_t>(end - buf));
    id += server_.id_prefix_;
    id.append(buf, end);
    return id;
  }

  void Write(HttpResponse res) {
    if (in_request_) {
      in_request_ = false;
      for (auto& h : gate_headers_) res.headers.push_back(std::move(h));
      gate_headers_.clear();
      EndGate();
      res.set_header("X-Request-Id", req_.request_id);
      if (server_.on_request_) {
        server_.on_request_(
            req_, route_, res.status,
            std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count());
      }
    }
    const bool close = !keep_alive_ || server_.stopping_;
    WireResponse(res, close, head_, &out_);
    ExpiresAfter(server_.options_.io_timeout);
    boost::asio::async_write(socket_, boost::asio::buffer(out_),
                             [self = shared_from_this(), close](beast::error_code ec, size_t) {
                               self->busy_ = false;
                               self->work_.reset();
                               if (ec) return self->Close();
                               // The client may still be sending a request we refused (too
                               // large, malformed): read it away before closing, or it would
                               // get a reset instead of our answer.
                               if (close) return self->LingeringClose();
                               self->ReadNext();
                             });
  }

  // Stops sending, then discards what the peer still sends (bounded in bytes and time)
  // until it closes too.
  void LingeringClose() {
    beast::error_code ec;
    socket_.shutdown(tcp::socket::shutdown_send, ec);
    if (ec) return Close();
    ExpiresAfter(std::chrono::seconds(5));
    Discard(64 << 20);
  }

  void Discard(size_t budget) {
    if (budget == 0) return Close();
    buffer_.consume(buffer_.size());
    socket_.async_read_some(buffer_.prepare(64 << 10),
                            [self = shared_from_this(), budget](beast::error_code ec, size_t n) {
                              if (ec) return self->Close();
                              self->Discard(budget > n ? budget - n : 0);
                            });
  }

  void Close() {
    beast::error_code ec;
    socket_.shutdown(tcp::socket::shutdown_send, ec);
    socket_.close(ec);
  }

  HttpServer& server_;
  Socket socket_;
  // When the connection's current read or write must have ended (steady clock, ns since
  // its epoch), else kNoDeadline; written on the strand, read by the server's sweep.
  std::atomic<int64_t> deadline_{kNoDeadline};
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  HttpRequest req_;  // valid from Handle() until its response is written
  std::string out_;  // the response on the wire, while it is written
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> work_;
  std::string remote_addr_;
  ClientIp peer_client_;       // the peer as a client (set once)
  bool peer_trusted_ = false;  // the peer is a trusted proxy
  bool keep_alive_ = false;
  bool busy_ = false;  // between a request read and its response written
  std::atomic<bool> peer_gone_{false};
  bool in_request_ = false;  // a parsed request awaits its answer
  bool handed_off_ = false;  // a handler has it (and answers through its Reply)
  bool head_ = false;        // the request is a HEAD: answer without the body
  std::string route_;        // its route pattern ("" when none matched)
  std::vector<std::pair<std::string, std::string>> gate_headers_;  // for its answer
  std::function<void()> on_end_;  // the gate's, run when the answer is written
  std::chrono::steady_clock::time_point started_;
  const uint64_t id_;
};

// ---- Reply -------------------------------------------------------------------------

struct ReplyState {
  std::shared_ptr<Session> session;
  std::atomic<bool> answered{false};

  ~ReplyState() {
    if (!answered.load()) {
      session->Send(
          session->ErrorResponse(MakeError(ErrorCode::kInternal, "the request was not answered")));
    }
  }
};

Reply::Reply(std::shared_ptr<Session> session) : state_(std::make_shared<ReplyState>()) {
  state_->session = std::move(session);
}

void Reply::Send(HttpResponse res) const {
  if (state_->answered.exchange(true)) return;
  state_->session->Send(std::move(res));
}

bool Reply::PeerGone() const { return state_->session->PeerGone(); }

void Reply::Later(std::function<void(HttpResponse&)> fill) const {
  if (state_->answered.exchange(true)) return;
  state_->session->Later(std::move(fill));
}

// ---- HttpServer --------------------------------------------------------------------

HttpServer::HttpServer(boost::asio::io_context& io, HttpServerOptions options, Router router,
                       std::function<void(const Error&, HttpResponse&)> on_error,
                       RequestObserver on_request)
    : options_(options),
      router_(std::move(router)),
      on_error_(std::move(on_error)),
      on_request_(std::move(on_request)),
      id_prefix_(RandomId("", 4)),
      io_(io),
      handlers_(static_cast<size_t>(std::max(1, options.handler_threads))),
      acceptor_(io_),
      accept_pause_(io_),
      sweep_(io_) {
  spare_fd_ = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  // The answer to a refused connection, rendered once through the one error map.
  HttpResponse r;
  on_error_(MakeError(ErrorCode::kTooManyConnections,
                      "the server has too many open connections; retry shortly"),
            r);
  WireResponse(r, /*close=*/true, /*head=*/false, &refusal_);
}

HttpServer::~HttpServer() {
  Stop();
  handlers_.join();
  if (spare_fd_ >= 0) ::close(spare_fd_);
}

Result<int> HttpServer::Listen(const std::string& host, int port) {
  beast::error_code ec;
  auto address = boost::asio::ip::make_address(host == "localhost" ? "127.0.0.1" : host, ec);
  if (ec)
    return MakeError(ErrorCode::kBadRequest, "cannot listen on '" + host + "': not an IP address");
  tcp::endpoint endpoint(address, static_cast<unsigned short>(port));
  acceptor_.open(endpoint.protocol(), ec);
  if (!ec) acceptor_.set_option(boost::asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor_.bind(endpoint, ec);
  if (!ec) acceptor_.listen(boost::asio::socket_base::max_listen_connections, ec);
  if (ec) {
    return MakeError(ErrorCode::kInternal,
                     "cannot listen on " + host + ":" + std::to_string(port) + ": " + ec.message());
  }
  Accept();
  Sweep();
  return static_cast<int>(acceptor_.local_endpoint().port());
}

void HttpServer::Sweep() {
  sweep_.expires_after(kSweepPeriod);
  sweep_.async_wait([this](beast::error_code ec) {
    if (ec || stopping_) return;
    const int64_t now = SteadyNanos();
    std::vector<std::shared_ptr<Session>> overdue;
    {
      std::lock_guard lock(mu_);
      for (auto& [id, weak] : live_) {
        if (auto s = weak.lock(); s && s->Overdue(now)) overdue.push_back(std::move(s));
      }
    }
    for (auto& s : overdue) s->CloseIfOverdue();
    overdue.clear();  // a session's last reference may go here: mu_ is not held
    Sweep();
  });
}

void HttpServer::Accept() {
  acceptor_.async_accept(Strand(io_.get_executor()), [this](beast::error_code ec, Socket socket) {
    if (stopping_ || !acceptor_.is_open()) return;
    if (ec == boost::asio::error::no_descriptors || ec.value() == ENFILE ||
        ec == boost::asio::error::no_buffer_space || ec == boost::asio::error::no_memory) {
      return OnDescriptorsExhausted();
    }
    if (!ec) {
      beast::error_code ignored;
      socket.set_option(tcp::no_delay(true), ignored);
      std::shared_ptr<Session> session;
      {
        std::lock_guard lock(mu_);
        if (live_.size() < options_.max_connections) {
          const uint64_t id = next_id_++;
          session = std::make_shared<Session>(*this, std::move(socket), id);
          live_.emplace(id, session);
        }
      }
      if (session) {
        session->Start();
      } else {
        Refuse(socket.release(ignored));
      }
    }
    Accept();
  });
}

void HttpServer::Refuse(int fd) {
  if (fd < 0) return;
  refused_.fetch_add(1, std::memory_order_relaxed);
  // Best effort and never blocking: a full socket buffer just loses the answer.
  [[maybe_unused]] ssize_t n =
      ::send(fd, refusal_.data(), refusal_.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
  ::shutdown(fd, SHUT_WR);
  ::close(fd);
}

void HttpServer::OnDescriptorsExhausted() {
  if (spare_fd_ >= 0) {
    ::close(spare_fd_);
    spare_fd_ = -1;
    int fd = ::accept4(acceptor_.native_handle(), nullptr, nullptr, SOCK_CLOEXEC);
    if (fd >= 0) Refuse(fd);  // first: its descriptor is the one the spare takes back
    spare_fd_ = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) return Accept();  // more may be waiting
    // Nothing was waiting: Linux's accept() fails with EMFILE as soon as the descriptor
    // table is full, backlog or not, so accepting again now would spin. Wait until a
    // connection arrives instead (or, should that wake-up be missed, 250 ms).
  }
  auto resumed = std::make_shared<std::atomic<bool>>(false);
  auto resume = [this, resumed](beast::error_code ec) {
    if (ec == boost::asio::error::operation_aborted || stopping_) return;
    if (resumed->exchange(true)) return;
    accept_pause_.cancel();
    if (spare_fd_ < 0) spare_fd_ = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    Accept();
  };
  if (spare_fd_ >= 0) acceptor_.async_wait(tcp::acceptor::wait_read, resume);
  accept_pause_.expires_after(std::chrono::milliseconds(spare_fd_ >= 0 ? 250 : 50));
  accept_pause_.async_wait(resume);
}

size_t HttpServer::open_connections() const {
  std::lock_guard lock(mu_);
  return live_.size();
}

void HttpServer::Forget(uint64_t id) {
  std::lock_guard lock(mu_);
  live_.erase(id);
}

void HttpServer::Run() {
  std::vector<std::thread> threads;
  for (int i = 1; i < options_.io_threads; ++i) threads.emplace_back([this] { io_.run(); });
  io_.run();
  for (auto& t : threads) t.join();
}

void HttpServer::Stop() {
  if (stopping_.exchange(true)) return;
  boost::asio::post(io_, [this] {
    beast::error_code ec;
    acceptor_.close(ec);
    accept_pause_.cancel();
    sweep_.cancel();
    std::vector<std::shared_ptr<Session>> sessions;
    {
      std::lock_guard lock(mu_);
      for (auto& [id, weak] : live_) {
        if (auto s = weak.lock()) sessions.push_back(std::move(s));
      }
    }
    for (auto& s : sessions) s->CloseIfIdle();
  });
}

}  // namespace sluice
