// Prometheus exposition pieces and the traceparent check.
#include "server/metrics.h"

#include <catch2/catch.hpp>

#include "server/http.h"

namespace sluice {
namespace {

TEST_CASE("label values are escaped", "[metrics]") {
  CHECK(EscapeLabel("plain") == "plain");
  CHECK(EscapeLabel("a\"b\\c\nd") == "a\\\"b\\\\c\\nd");
}

TEST_CASE("histograms are cumulative with +Inf, sum and count", "[metrics]") {
  Histogram h({1, 5});
  for (double v : {0.5, 1.0, 3.0, 9.0}) h.Observe(v);
  std::string out;
  h.Render(out, "x", "a=\"b\"");
  CHECK(out.find("x_bucket{a=\"b\",le=\"1\"} 2\n") != std::string::npos);
  CHECK(out.find("x_bucket{a=\"b\",le=\"5\"} 3\n") != std::string::npos);
  CHECK(out.find("x_bucket{a=\"b\",le=\"+Inf\"} 4\n") != std::string::npos);
  CHECK(out.find("x_sum{a=\"b\"} 13.5\n") != std::string::npos);
  CHECK(out.find("x_count{a=\"b\"} 4\n") != std::string::npos);
}

TEST_CASE("rejections beyond the tenant cap count as other", "[metrics]") {
  Metrics m(2);
  m.CountRejection("q", "a", "queue_full");
  m.CountRejection("q", "b", "queue_full");
  m.CountRejection("q", "c", "queue_full");
  m.CountRejection("q", "d", "deadline_unreachable");
  m.CountRejection("r", "a", "queue_full");
  CHECK(m.Rejections("q") == 4);
  CHECK(m.Rejections("r") == 1);
  std::string out = m.Render({}, 0);
  CHECK(out.find("tenant=\"other\",reason=\"queue_full\"} 1") != std::string::npos);
  CHECK(out.find("tenant=\"other\",reason=\"deadline_unreachable\"} 1") != std::string::npos);
  CHECK(out.find("tenant=\"c\"") == std::string::npos);
}

TEST_CASE("traceparent follows the W3C format", "[http]") {
  CHECK(ValidTraceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"));
  CHECK(ValidTraceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"));
  CHECK_FALSE(ValidTraceparent("00-00000000000000000000000000000000-00f067aa0ba902b7-01"));
  CHECK_FALSE(ValidTraceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01"));
  CHECK_FALSE(ValidTraceparent("00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01"));
  CHECK_FALSE(ValidTraceparent("ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"));
  CHECK_FALSE(ValidTraceparent("not-a-trace"));
}

}  // namespace
}  // namespace sluice
