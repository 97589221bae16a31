// HTTP/1.1 on Boost.Beast: keep-alive connections served by a few I/O threads, so a
// request costs no thread hand-off of its own. Asynchronous handlers (intake, leases,
// acks) run on the I/O thread and answer when the store has committed, so one
// group commit wakes one I/O thread for a whole batch instead of one thread per
// request; long-polls hold no thread at all. Blocking handlers (admin, reads) run on
// a separate pool.
//
// Invariants:
//   1. Each request gets exactly one response (a handler that never answers gets 500).
//   2. Errors the transport finds itself (unknown route, wrong method, body too large,
//      malformed request) are answered through the `on_error` renderer, like any other.
//   3. After Stop(): no new connections; idle ones close; a request in progress is
//      answered, then its connection closes; Run() returns when all are gone.
//   4. At most max_connections are open. One more, or one that cannot get a file
//      descriptor, is answered `503` and closed without a read, so the accept loop never
//      spins and open connections keep their service.
// Thread-safe: Stop() may be called from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/error.h"
#include "server/asio.h"
#include "server/client_ip.h"
#include "server/router.h"

namespace sluice {

// What a gate decided for one routed request (the intake-protection layers).
struct GateResult {
  std::optional<Error> refused;  // answered instead of running the handler
  std::vector<std::pair<std::string, std::string>> headers;  // added to the answer
  std::function<void()> on_end;  // runs once, when the answer is written or the connection goes
};
// Decides a request whose route is known, before its handler: at once (a result), or
// later (nullopt, and then `later` runs exactly once, from any thread).
using Gate = std::function<std::optional<GateResult>(const HttpRequest&, RouteGroup,
                                                     std::function<void(GateResult)> later)>;

struct HttpServerOptions {
  int io_threads = 2;        // threads running connections and asynchronous handlers
  int handler_threads = 16;  // threads running blocking handlers
  size_t max_body_bytes = 1 << 20;
  size_t max_header_bytes = 16 << 10;
  // Enforced to within HttpServer::kSweepPeriod (250 ms).
  std::chrono::seconds keep_alive_timeout{5};  // idle time before a connection closes
  std::chrono::seconds io_timeout{60};         // longest read of one request or write
  // Open connections served at once; a connection beyond it is answered 503 and closed
  // at once, as is one that arrives when the process is out of file descriptors.
  size_t max_connections = 4096;
  // Peers whose forwarding header names the client (HttpRequest::client_ip); none by
  // default: the client is the socket peer.
  TrustedProxies trusted_proxies;
  // Decides before routing, with only the client known (intake protection): an Error
  // answers the request at once, and nothing else runs for it. Any I/O thread; quick.
  std::function<std::optional<Error>(const HttpRequest&)> admit;
  // After routing (the route's group known), before the handler. Any I/O thread.
  Gate gate;
};

// Hears of every answered request: the route pattern ("" when none matched), the
// status, and the time from request read to response handed to the socket.
using RequestObserver = std::function<void(const HttpRequest& req, const std::string& route,
                                           int status, double seconds)>;

class HttpServer {
 public:
  // `on_error` renders a transport error (404, 405, 413, 400, 500) as a response.
  // `io` runs the connections (Run() runs it on options.io_threads threads); it must
  // outlive the server.
  HttpServer(boost::asio::io_context& io, HttpServerOptions options, Router router,
             std::function<void(const Error&, HttpResponse&)> on_error,
             RequestObserver on_request = nullptr);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds and listens; returns the bound port (useful with port 0).
  Result<int> Listen(const std::string& host, int port);
  // Serves until Stop(); returns once every connection has closed.
  void Run();
  void Stop();

  size_t open_connections() const;
  // Connections answered 503 and closed at once (over the cap, or out of descriptors).
  uint64_t refused_connections() const { return refused_.load(std::memory_order_relaxed); }

 private:
  friend class Session;
  void Accept();
  void Forget(uint64_t id);
  // Writes the canned 503 to a connection we will not serve, then closes it.
  void Refuse(int fd);
  // accept() failed for want of descriptors: gives up the spare one to accept and
  // refuse a waiting connection; with none waiting (or no spare), looks again in 50 ms.
  void OnDescriptorsExhausted();
  // Every kSweepPeriod: closes the connections whose read or write is past its deadline
  // (a keep-alive left idle, a request or response that trickles).
  void Sweep();
  static constexpr std::chrono::milliseconds kSweepPeriod{250};

  HttpServerOptions options_;
  Router router_;
  std::function<void(const Error&, HttpResponse&)> on_error_;
  RequestObserver on_request_;
  std::atomic<uint64_t> request_counter_{0};
  std::string id_prefix_;  // random per process, so request ids differ across restarts
  boost::asio::io_context& io_;
  boost::asio::thread_pool handlers_;
  boost::asio::ip::tcp::acceptor acceptor_;
  std::atomic<bool> stopping_{false};
  std::atomic<uint64_t> refused_{0};
  std::string refusal_;  // the raw 503 a refused connection gets (built once)
  int spare_fd_ = -1;    // a descriptor held back for OnDescriptorsExhausted (accept chain only)
  boost::asio::steady_timer accept_pause_;
  boost::asio::steady_timer sweep_;
  mutable std::mutex mu_;
  uint64_t next_id_ = 0;                                       // guarded by mu_
  std::unordered_map<uint64_t, std::weak_ptr<Session>> live_;  // guarded by mu_
};

}  // namespace sluice
