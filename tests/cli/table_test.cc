// The CLI's table renderer: alignment, widths, and the one-line-per-row invariants.
#include "cli/table.h"

#include <catch2/catch.hpp>

namespace sluice::cli {
namespace {

TEST_CASE("table: columns are padded to the widest cell, numbers right-aligned") {
  Table t({{"QUEUE"}, {"QUEUED", Align::kRight}, {"PAUSED"}});
  t.AddRow({"report-export", "7", "no"});
  t.AddRow({"q", "12345678", "yes"});
  CHECK(t.Render() ==
        "QUEUE            QUEUED  PAUSED\n"
        "report-export         7  no\n"
        "q              12345678  yes\n");
  CHECK(t.rows() == 2);
}

TEST_CASE("table: a header wider than every cell sets the width, with no trailing blanks") {
  Table t({{"A"}, {"LONG_HEADER"}});
  t.AddRow({"x", "y"});
  CHECK(t.Render() ==
        "A  LONG_HEADER\n"
        "x  y\n");
}

TEST_CASE("table: empty cells show as '-', missing cells are padded, extra cells dropped") {
  Table t({{"A"}, {"B"}, {"C"}});
  t.AddRow({"", "b"});
  t.AddRow({"a", "b", "c", "extra"});
  CHECK(t.Render() ==
        "A  B  C\n"
        "-  b  -\n"
        "a  b  c\n");
}

TEST_CASE("table: control characters cannot break a row or reach the terminal") {
  Table t({{"TENANT"}, {"N", Align::kRight}});
  t.AddRow({"evil\nname\t\x1b[31m", "1"});
  std::string out = t.Render();
  CHECK(out ==
        "TENANT           N\n"
        "evil?name??[31m  1\n");
  CHECK(out.find('\x1b') == std::string::npos);
}

TEST_CASE("table: widths count UTF-8 code points, not bytes") {
  CHECK(DisplayWidth("abc") == 3);
  CHECK(DisplayWidth("\xc3\xa9t\xc3\xa9") == 3);  // "été"
  Table t({{"NAME"}, {"N", Align::kRight}});
  t.AddRow({"\xc3\xa9t\xc3\xa9", "1"});
  t.AddRow({"abcd", "2"});
  CHECK(t.Render() ==
        "NAME  N\n"
        "\xc3\xa9t\xc3\xa9   1\n"
        "abcd  2\n");
}

TEST_CASE("table: a table without rows is its header") {
  Table t({{"ID"}, {"STATE"}});
  CHECK(t.Render() == "ID  STATE\n");
}

TEST_CASE("fields: keys are aligned, values follow the cell rules") {
  CHECK(RenderFields({{"id", "job_1"}, {"blocked_by", ""}, {"state", "queued"}}) ==
        "id          job_1\n"
        "blocked_by  -\n"
        "state       queued\n");
}

}  // namespace
}  // namespace sluice::cli
