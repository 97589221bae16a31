#include "common/strict_json.h"

#include <cmath>
#include <string>
#include <vector>

#include "common/utf8.h"

namespace sluice {
namespace {

using nlohmann::json;

// Builds the DOM from SAX events, refusing what the default parser lets through.
class StrictBuilder final : public nlohmann::json_sax<json> {
 public:
  explicit StrictBuilder(int max_depth) : max_depth_(max_depth) {}

  bool null() override { return Put(json(nullptr)); }
  bool boolean(bool v) override { return Put(json(v)); }
  bool number_integer(number_integer_t v) override { return Put(json(v)); }
  bool number_unsigned(number_unsigned_t v) override { return Put(json(v)); }
  bool number_float(number_float_t v, const string_t&) override {
    if (!std::isfinite(v)) return Fail("a number is too large");
    return Put(json(v));
  }
  bool string(string_t& v) override { return Put(json(std::move(v))); }
  bool binary(binary_t&) override { return Fail("binary values are not JSON"); }

  bool start_object(std::size_t) override { return Open(json::object()); }
  bool key(string_t& k) override {
    json& object = *stack_.back();
    if (object.contains(k)) return Fail("duplicate key " + QuoteForMessage(k));
    key_ = std::move(k);
    return true;
  }
  bool end_object() override {
    stack_.pop_back();
    return true;
  }
  bool start_array(std::size_t) override { return Open(json::array()); }
  bool end_array() override {
    stack_.pop_back();
    return true;
  }

  bool parse_error(std::size_t position, const std::string&,
                   const nlohmann::detail::exception& ex) override {
    if (error_.empty()) {
      // nlohmann's message quotes the input it read; keep it, made safe to print.
      std::string what = ex.what();
      if (size_t p = what.find("] "); p != std::string::npos) what = what.substr(p + 2);
      error_ = "the body is not valid JSON (byte " + std::to_string(position) +
               "): " + SanitizeUtf8(what.substr(0, 200));
    }
    return false;
  }

  const std::string& error() const { return error_; }
  json& root() { return root_; }

 private:
  bool Fail(std::string why) {
    if (error_.empty()) error_ = std::move(why);
    return false;
  }

  // Places a value where the parse is: the root, the next array element, or the
  // value of the last key. Returns where it went.
  json* Place(json v) {
    if (stack_.empty()) {
      root_ = std::move(v);
      return &root_;
    }
    json& parent = *stack_.back();
    if (parent.is_array()) {
      parent.push_back(std::move(v));
      return &parent.back();
    }
    json& slot = parent[key_];
    slot = std::move(v);
    return &slot;
  }

  bool Put(json v) {
    Place(std::move(v));
    return true;
  }

  bool Open(json container) {
    if (static_cast<int>(stack_.size()) >= max_depth_) {
      return Fail("the JSON is nested deeper than " + std::to_string(max_depth_) + " levels");
    }
    stack_.push_back(Place(std::move(container)));
    return true;
  }

  const int max_depth_;
  json root_;
  std::vector<json*> stack_;  // open containers, innermost last
  std::string key_;           // the key whose value comes next
  std::string error_;
};

}  // namespace

Result<json> ParseStrictJson(std::string_view text, int max_depth) {
  // nlohmann's lexer takes a NUL byte for the end of input, so "{}\0garbage" would
  // pass; no JSON text holds a raw NUL (in strings it must be escaped).
  if (size_t nul = text.find('\0'); nul != std::string_view::npos) {
    return MakeError(ErrorCode::kBadRequest, "the body is not valid JSON (byte " +
                                                 std::to_string(nul + 1) + "): a raw NUL byte");
  }
  StrictBuilder builder(max_depth);
  const bool ok = json::sax_parse(text.begin(), text.end(), &builder, json::input_format_t::json,
                                  /*strict=*/true, /*ignore_comments=*/false);
  if (!ok) {
    return MakeError(ErrorCode::kBadRequest,
                     builder.error().empty() ? "the body is not valid JSON" : builder.error());
  }
  return std::move(builder.root());
}

}  // namespace sluice
