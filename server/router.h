// The route table: (method, path pattern) -> handler. Patterns are literal segments
// and captures: "/v1/queues/{}/jobs" captures one non-empty segment without ':' and
// "/v1/admin/queues/{}:simulate" captures what precedes the ":simulate" suffix.
// A handler is blocking (it runs on the server's handler pool and fills a response)
// or asynchronous (it runs on an I/O thread, must not block, and answers through a
// Reply, possibly later and from another thread).
// Built before the server starts; read-only afterwards (thread-safe to read).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "server/http_types.h"
#include "server/route_groups.h"

namespace sluice {

class Session;
struct ReplyState;

// Answers one request, once, from any thread. The request it answers stays valid
// until then. A Reply dropped without answering answers 500.
class Reply {
 public:
  explicit Reply(std::shared_ptr<Session> session);

  void Send(HttpResponse res) const;
  // Runs `fill` on the connection's own strand, then sends the response it filled. For
  // completions of asynchronous work: one delivered to the server's I/O threads (the
  // store's commits are) renders there at once when the connection's strand is free;
  // from any other thread (the writer's, the dispatcher's) it is queued to the strand,
  // so such a thread never spends time rendering.
  void Later(std::function<void(HttpResponse&)> fill) const;
  // Whether the client has hung up while its request waited (any thread).
  bool PeerGone() const;

 private:
  std::shared_ptr<ReplyState> state_;  // shared by copies; answers 500 if never sent
};

using Handler = std::function<void(const HttpRequest&, HttpResponse&)>;
using AsyncHandler = std::function<void(const HttpRequest&, Reply)>;

class Router {
 public:
  // Each Add throws std::logic_error for a route no route group names
  // (server/route_groups.h): sluiced then fails at start, and every test with it.
  void Add(std::string method, const std::string& pattern, Handler handler);
  void AddAsync(std::string method, const std::string& pattern, AsyncHandler handler);
  // An asynchronous route whose answer may wait long (a long-poll): while it waits, the
  // server watches the connection, and Reply::PeerGone() tells whether the client hung
  // up. Other routes answer within a commit and are not watched (the watch costs
  // system calls on every request).
  void AddLongPoll(std::string method, const std::string& pattern, AsyncHandler handler);

  struct Route {
    std::string method;
    std::string pattern;                // as registered, for metrics and logs
    std::vector<std::string> segments;  // "{}" or "{}:suffix" capture; else literal
    Handler handler;                    // exactly one of these is set
    AsyncHandler async_handler;
    bool long_poll = false;                // watch the peer while the answer waits
    RouteGroup group = RouteGroup::kRead;  // RouteGroupOf(method, pattern)
  };
  enum class Found { kRoute, kNoPath, kWrongMethod };
  // The route for `method` and `path`, and its captures (percent-decoded). HEAD finds
  // the GET route (the server sends its headers without the body). On kWrongMethod,
  // `allowed` (if given) gets the methods the path does allow, HEAD with GET.
  Found Find(const std::string& method, const std::string& path, const Route** route,
             std::vector<std::string>* captures, std::vector<std::string>* allowed = nullptr) const;

  const std::vector<Route>& routes() const { return routes_; }

 private:
  void AddRoute(Route route);

  std::vector<Route> routes_;
};

}  // namespace sluice
