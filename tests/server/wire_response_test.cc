// The response bytes the server writes in one piece: checked here byte for byte, and
// by every system test through a real client.
#include "server/wire_response.h"

#include <catch2/catch.hpp>
#include <string>

namespace sluice {
namespace {

TEST_CASE("a response on the wire: status line, headers in order, length, body") {
  HttpResponse res;
  res.status = 202;
  res.set_content("{\"id\":\"j1\"}", "application/json");
  res.set_header("Location", "/v1/jobs/j1");
  res.set_header("X-Request-Id", "r-1");
  std::string out = "left over";
  WireResponse(res, /*close=*/false, /*head=*/false, &out);
  CHECK(out ==
        "HTTP/1.1 202 Accepted\r\n"
        "Content-Type: application/json\r\n"
        "Location: /v1/jobs/j1\r\n"
        "X-Request-Id: r-1\r\n"
        "Content-Length: 11\r\n"
        "\r\n"
        "{\"id\":\"j1\"}");
}

TEST_CASE("a response that closes, and one to HEAD: GET's length without the body") {
  HttpResponse res;
  res.status = 429;
  res.set_content("{}", "application/problem+json");
  std::string out;
  WireResponse(res, /*close=*/true, /*head=*/true, &out);
  CHECK(out ==
        "HTTP/1.1 429 Too Many Requests\r\n"
        "Content-Type: application/problem+json\r\n"
        "Content-Length: 2\r\n"
        "Connection: close\r\n"
        "\r\n");
}

TEST_CASE("no header can split the response, and a status off the scale is a 500") {
  HttpResponse res;
  res.status = 1000;
  res.set_header("X-Evil\r\nSet-Cookie", "a\r\nb\nc");
  std::string out;
  WireResponse(res, false, false, &out);
  CHECK(out ==
        "HTTP/1.1 500 Internal Server Error\r\n"
        "X-Evil  Set-Cookie: a  b c\r\n"
        "Content-Length: 0\r\n"
        "\r\n");
}

TEST_CASE("statuses without a body carry no length and no body") {
  HttpResponse res;
  res.status = 204;
  res.body = "ignored";
  std::string out;
  WireResponse(res, false, false, &out);
  CHECK(out == "HTTP/1.1 204 No Content\r\n\r\n");
}

}  // namespace
}  // namespace sluice
