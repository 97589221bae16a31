// Named statements read from a .sql file: blocks that each open with a line
// "-- name: NAME" and run to the next such line. A driver looks its statements up by
// name once, at open, so a missing one fails there rather than at first use.
#pragma once

#include <map>
#include <stdexcept>
#include <string>
#include <string_view>

namespace sluice {

class Statements {
 public:
  // Parses `text`; throws std::invalid_argument for a name given twice or an empty
  // statement. `source` names the file in messages.
  Statements(std::string_view text, std::string source);

  // The statement's text (comments kept, the trailing ';' dropped); throws
  // std::out_of_range naming the file if there is none of that name.
  const std::string& Get(std::string_view name) const;
  const std::map<std::string, std::string, std::less<>>& all() const { return by_name_; }

 private:
  std::string source_;
  std::map<std::string, std::string, std::less<>> by_name_;
};

}  // namespace sluice
