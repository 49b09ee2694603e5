#include "cache/printable.hpp"

#include <cstdio>
#include <nlohmann/json.hpp>

namespace moejit::cache {
namespace {
// `message`: escape only control bytes, so a message whose excerpts are
// already escaped is not escaped twice.
std::string escaped(std::string_view text, size_t max, bool message) {
  std::string out;
  const size_t n = std::min(text.size(), max);
  out.reserve(n + 16);
  for (size_t i = 0; i < n; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if ((c >= 0x20 && c < 0x7f && (c != '\\' || message)) || (message && (c == '\n' || c == '\t'))) {
      out += static_cast<char>(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  if (text.size() > max) out += "... (" + std::to_string(text.size()) + " bytes)";
  return out;
}
}  // namespace

std::string printable(std::string_view text, size_t max) {
  return escaped(text, max, false);
}

std::string quote(std::string_view text, size_t max) {
  std::string out(1, '"');
  out += printable(text, max);
  out += '"';
  return out;
}

std::string json_excerpt(const nlohmann::json& value, size_t max) {
  switch (value.type()) {
    case nlohmann::json::value_t::string: return quote(value.get_ref<const std::string&>(), max);
    case nlohmann::json::value_t::array:
      return "an array of " + std::to_string(value.size()) + (value.size() == 1 ? " element" : " elements");
    case nlohmann::json::value_t::object:
      return "an object with " + std::to_string(value.size()) + (value.size() == 1 ? " field" : " fields");
    case nlohmann::json::value_t::binary: return "binary data";
    case nlohmann::json::value_t::discarded: return "nothing";
    default: return printable(value.dump(), max);  // a number, a boolean or null
  }
}

std::string printable_message(std::string_view text, size_t max) {
  return escaped(text, max, true);
}

}  // namespace moejit::cache
