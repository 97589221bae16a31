// The submitting side of sluice-bench-e2e: C keep-alive HTTP/1.1 connections driven by
// one event-loop thread (Boost.Beast), each with one submit in flight at a time, as a
// service with many concurrent requests on one event loop would send them (BullMQ's
// peer script adds from one Node.js loop). Threads blocking in cpp-httplib, one per
// connection, cost the load generator about twice the CPU per submit on the 2 cores
// it shares with the server.
// Not thread-safe: Run() once, from one thread; the callbacks run on that thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

// clang-format off
#include "server/asio.h"
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
// clang-format on

namespace sluice::bench {

struct SubmitTarget {
  std::string host;
  uint16_t port = 0;
};

// "http://host:port" (no path) → host and port; port 0 when unreadable.
inline SubmitTarget ParseTarget(const std::string& url) {
  SubmitTarget t;
  std::string rest = url.rfind("http://", 0) == 0 ? url.substr(7) : url;
  size_t colon = rest.rfind(':');
  if (colon == std::string::npos) return t;
  t.host = rest.substr(0, colon);
  t.port = static_cast<uint16_t>(std::stoi(rest.substr(colon + 1)));
  return t;
}

class AsyncSubmitters {
 public:
  // Job i's request: its bearer token and its body (called just before it is sent).
  using Request = std::function<void(int64_t i, std::string& token, std::string& body)>;
  // Job i's answer: the status, body and Location header, or status 0 and the transport
  // error's text.
  using Answer = std::function<void(int64_t i, int status, const std::string& body,
                                    std::string_view location)>;

  // Connection c goes to targets[c % targets.size()]; job indexes come from `next`
  // until `jobs`.
  AsyncSubmitters(std::vector<SubmitTarget> targets, int connections, std::string path,
                  std::atomic<int64_t>& next, int64_t jobs, Request request, Answer answer)
      : targets_(std::move(targets)),
        connections_(connections),
        path_(std::move(path)),
        next_(next),
        jobs_(jobs),
        request_(std::move(request)),
        answer_(std::move(answer)) {}

  // Connects every connection and submits until every job index is taken and answered.
  void Run() {
    std::vector<std::shared_ptr<Conn>> conns;
    for (int c = 0; c < connections_; ++c) {
      const SubmitTarget& t = targets_[static_cast<size_t>(c) % targets_.size()];
      auto conn = std::make_shared<Conn>(*this, io_);
      boost::system::error_code ec;
      boost::asio::ip::tcp::resolver resolver(io_);
      auto endpoints = resolver.resolve(t.host, std::to_string(t.port), ec);
      if (!ec) boost::asio::connect(conn->socket, endpoints, ec);
      if (!ec) conn->socket.set_option(boost::asio::ip::tcp::no_delay(true), ec);
      if (ec) {
        Fail(-1, ec);
        continue;
      }
      conn->host = t.host + ":" + std::to_string(t.port);
      conns.push_back(conn);
    }
    for (auto& c : conns) c->Next();
    io_.run();
  }

 private:
  struct Conn : std::enable_shared_from_this<Conn> {
    Conn(AsyncSubmitters& owner_, boost::asio::io_context& io) : owner(owner_), socket(io) {}
    AsyncSubmitters& owner;
    boost::asio::ip::tcp::socket socket;
    std::string host;
    boost::beast::flat_buffer buffer;
    boost::beast::http::request<boost::beast::http::string_body> req;
    boost::beast::http::response<boost::beast::http::string_body> res;
    int64_t index = -1;
    std::string token, body;

    void Next() {
      index = owner.next_.fetch_add(1);
      if (index >= owner.jobs_) return;  // this connection is done; Run() ends with the last
      token.clear();
      body.clear();
      owner.request_(index, token, body);
      namespace http = boost::beast::http;
      req = {};
      req.method(http::verb::post);
      req.target(owner.path_);
      req.version(11);
      req.set(http::field::host, host);
      req.set(http::field::authorization, "Bearer " + token);
      req.set(http::field::content_type, "application/json");
      req.body() = std::move(body);
      req.keep_alive(true);
      req.prepare_payload();
      http::async_write(
          socket, req, [self = shared_from_this()](boost::system::error_code ec, size_t) {
            if (ec) return self->owner.Fail(self->index, ec);
            self->res = {};
            http::async_read(self->socket, self->buffer, self->res,
                             [self](boost::system::error_code ec2, size_t) {
                               if (ec2) return self->owner.Fail(self->index, ec2);
                               const auto location = self->res[boost::beast::http::field::location];
                               self->owner.answer_(
                                   self->index, static_cast<int>(self->res.result_int()),
                                   self->res.body(),
                                   std::string_view(location.data(), location.size()));
                               self->Next();
                             });
          });
    }
  };

  // A transport error ends that connection (its job is answered with status 0).
  void Fail(int64_t index, const boost::system::error_code& ec) {
    answer_(index, 0, ec.message(), {});
  }

  std::vector<SubmitTarget> targets_;
  const int connections_;
  const std::string path_;
  std::atomic<int64_t>& next_;
  const int64_t jobs_;
  Request request_;
  Answer answer_;
  boost::asio::io_context io_{1};
};

}  // namespace sluice::bench
