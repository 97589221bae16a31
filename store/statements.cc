#include "store/statements.h"

namespace sluice {
namespace {

constexpr std::string_view kMarker = "-- name:";

std::string_view Trim(std::string_view s) {
  while (!s.empty() &&
         (s.front() == ' ' || s.front() == '\t' || s.front() == '\n' || s.front() == '\r')) {
    s.remove_prefix(1);
  }
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\n' ||
                        s.back() == '\r' || s.back() == ';')) {
    s.remove_suffix(1);
  }
  return s;
}

}  // namespace

Statements::Statements(std::string_view text, std::string source) : source_(std::move(source)) {
  std::string name;
  std::string body;
  auto flush = [&] {
    if (name.empty()) return;
    std::string_view stmt = Trim(body);
    if (stmt.empty()) throw std::invalid_argument(source_ + ": statement " + name + " is empty");
    if (!by_name_.emplace(name, std::string(stmt)).second) {
      throw std::invalid_argument(source_ + ": statement " + name + " is named twice");
    }
  };
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    if (line.substr(0, kMarker.size()) == kMarker) {
      flush();
      name = std::string(Trim(line.substr(kMarker.size())));
      body.clear();
    } else if (!name.empty()) {
      body.append(line);
      body.push_back('\n');
    }
  }
  flush();
}

const std::string& Statements::Get(std::string_view name) const {
  auto it = by_name_.find(name);
  if (it == by_name_.end()) {
    throw std::out_of_range(source_ + " has no statement named " + std::string(name));
  }
  return it->second;
}

}  // namespace sluice
