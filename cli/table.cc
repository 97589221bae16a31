#include "cli/table.h"

#include <algorithm>

namespace sluice::cli {
namespace {

std::string Pad(const std::string& cell, size_t width, Align align) {
  size_t w = DisplayWidth(cell);
  std::string fill(width > w ? width - w : 0, ' ');
  return align == Align::kRight ? fill + cell : cell + fill;
}

void TrimTrailingBlanks(std::string& line) { line.erase(line.find_last_not_of(' ') + 1); }

}  // namespace

size_t DisplayWidth(const std::string& text) {
  return static_cast<size_t>(std::count_if(text.begin(), text.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  }));
}

std::string CleanCell(const std::string& cell) {
  if (cell.empty()) return "-";
  std::string out = cell;
  for (char& c : out) {
    unsigned char u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7F) c = '?';
  }
  return out;
}

Table::Table(std::vector<Column> columns) : columns_(std::move(columns)) {}

void Table::AddRow(std::vector<std::string> cells) {
  cells.resize(columns_.size());
  for (std::string& c : cells) c = CleanCell(c);
  rows_.push_back(std::move(cells));
}

std::string Table::Render() const {
  std::vector<size_t> widths;
  for (const Column& c : columns_) widths.push_back(DisplayWidth(c.header));
  for (const auto& row : rows_) {
    for (size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], DisplayWidth(row[i]));
  }
  auto line = [&](const std::vector<std::string>& cells) {
    std::string out;
    for (size_t i = 0; i < cells.size(); ++i) {
      if (i > 0) out += "  ";
      out += Pad(cells[i], widths[i], columns_[i].align);
    }
    TrimTrailingBlanks(out);
    return out + "\n";
  };
  std::vector<std::string> headers;
  for (const Column& c : columns_) headers.push_back(c.header);
  std::string out = line(headers);
  for (const auto& row : rows_) out += line(row);
  return out;
}

std::string RenderFields(const std::vector<std::pair<std::string, std::string>>& fields) {
  size_t width = 0;
  for (const auto& [key, value] : fields) width = std::max(width, DisplayWidth(key));
  std::string out;
  for (const auto& [key, value] : fields) {
    std::string l = Pad(CleanCell(key), width, Align::kLeft) + "  " + CleanCell(value);
    TrimTrailingBlanks(l);
    out += l + "\n";
  }
  return out;
}

}  // namespace sluice::cli
