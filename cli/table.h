// Plain-text tables for the sluice CLI: aligned columns, a header row, cells kept on one
// line. Pure string work — no I/O, no HTTP, no JSON — so it is unit tested on its own.
// Value types; thread-compatible.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace sluice::cli {

enum class Align { kLeft, kRight };

struct Column {
  std::string header;
  Align align = Align::kLeft;
};

// Rows of cells under named columns. Render() pads each column to its widest cell (display
// width: UTF-8 code points), separates columns by two spaces, and trims trailing blanks.
// Invariants of the output:
//   1. one line per row (plus the header), each ending in '\n';
//   2. control characters in a cell (newline, tab, escape, ...) are shown as '?', so a
//      hostile name cannot break the layout or write terminal escapes;
//   3. an empty cell is shown as "-", so every row has a visible value in every column.
class Table {
 public:
  explicit Table(std::vector<Column> columns);

  // A row with fewer cells than columns is padded with empty cells; extra cells are dropped.
  void AddRow(std::vector<std::string> cells);

  size_t rows() const { return rows_.size(); }
  std::string Render() const;

 private:
  std::vector<Column> columns_;
  std::vector<std::vector<std::string>> rows_;
};

// "key  value" lines with the keys padded to one width (the detail view of one record),
// under the same cell rules as Table.
std::string RenderFields(const std::vector<std::pair<std::string, std::string>>& fields);

// The cell rules applied to one value: control characters as '?', empty as "-".
std::string CleanCell(const std::string& cell);

// Display width of UTF-8 text: code points (continuation bytes do not count).
size_t DisplayWidth(const std::string& text);

}  // namespace sluice::cli
