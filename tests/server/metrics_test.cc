// Prometheus exposition pieces (numbers as the client libraries print them, histograms,
// process metrics) and the traceparent check.
#include "server/metrics.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <ctime>
#include <string>

#include "server/http.h"
#include "server/process_metrics.h"

namespace sluice {
namespace {

TEST_CASE("label values are escaped", "[metrics]") {
  CHECK(EscapeLabel("plain") == "plain");
  CHECK(EscapeLabel("a\"b\\c\nd") == "a\\\"b\\\\c\\nd");
}

TEST_CASE("numbers print as the Prometheus client libraries print them", "[metrics]") {
  // Go's strconv.FormatFloat(v, 'g', -1, 64), which client_golang uses for values and le.
  CHECK(PrometheusNumber(0.00025) == "0.00025");
  CHECK(PrometheusNumber(0.0001) == "0.0001");
  CHECK(PrometheusNumber(0.00001) == "1e-05");
  CHECK(PrometheusNumber(0.1) == "0.1");
  CHECK(PrometheusNumber(2.5) == "2.5");
  CHECK(PrometheusNumber(0) == "0");
  CHECK(PrometheusNumber(512) == "512");
  CHECK(PrometheusNumber(999999) == "999999");
  CHECK(PrometheusNumber(1e6) == "1e+06");
  CHECK(PrometheusNumber(2.13860352e8) == "2.13860352e+08");
  CHECK(PrometheusNumber(-3.5) == "-3.5");
  CHECK(PrometheusNumber(1.0 / 0.0) == "+Inf");
  CHECK(PrometheusNumber(-1.0 / 0.0) == "-Inf");
  CHECK(PrometheusNumber(std::nan("")) == "NaN");
  // Every printed value reads back as the same double.
  for (double v : {0.1 + 0.2, 1.0 / 3, 123456.789, 6.02214076e23, 1e-300}) {
    CHECK(std::stod(PrometheusNumber(v)) == v);
  }
}

TEST_CASE("a histogram's le labels are the shortest text of each bound", "[metrics]") {
  Histogram h({0.00025, 0.1, 2.5});
  std::string out;
  h.Render(out, "x", "");
  CHECK(out.find("x_bucket{le=\"0.00025\"} 0\n") != std::string::npos);
  CHECK(out.find("x_bucket{le=\"0.1\"} 0\n") != std::string::npos);
  CHECK(out.find("0000000") == std::string::npos);
}

TEST_CASE("process metrics are read from /proc", "[metrics]") {
  auto s = ReadProcessStats();
  REQUIRE(s);
  CHECK(s->resident_bytes > 0);
  CHECK(s->virtual_bytes >= s->resident_bytes);
  CHECK(s->open_fds >= 3);  // at least stdin, stdout, stderr
  CHECK(s->max_fds >= s->open_fds);
  CHECK(s->cpu_seconds >= 0);
  const double now = static_cast<double>(std::time(nullptr));
  CHECK(s->start_time_seconds <= now + 1);
  CHECK(s->start_time_seconds > now - 24 * 3600);  // this test process started today
  std::string out;
  RenderProcessMetrics(out, *s);
  for (const char* family : {"process_cpu_seconds_total", "process_open_fds", "process_max_fds",
                             "process_virtual_memory_bytes", "process_resident_memory_bytes",
                             "process_start_time_seconds"}) {
    CHECK(out.find(std::string("\n") + family + " ") != std::string::npos);
    CHECK(out.find(std::string("# TYPE ") + family + " ") != std::string::npos);
  }
  CHECK(out.find("# TYPE process_cpu_seconds_total counter\n") != std::string::npos);
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
