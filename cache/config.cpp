#include "cache/config.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <stdexcept>

#include "cache/cache_dir.hpp"

namespace moejit::cache {

std::optional<std::uint64_t> parse_byte_size(std::string_view text) {
  std::uint64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end == text.data()) return std::nullopt;
  std::string unit(end, text.data() + text.size());
  std::transform(unit.begin(), unit.end(), unit.begin(), [](unsigned char c) { return std::tolower(c); });
  int shift = 0;
  if (unit.empty() || unit == "b")
    shift = 0;
  else if (unit == "k" || unit == "kib")
    shift = 10;
  else if (unit == "m" || unit == "mib")
    shift = 20;
  else if (unit == "g" || unit == "gib")
    shift = 30;
  else if (unit == "t" || unit == "tib")
    shift = 40;
  else
    return std::nullopt;
  if (shift && value > (~std::uint64_t(0) >> shift)) return std::nullopt;
  return value << shift;
}

std::optional<bool> parse_flag(std::string_view text) {
  std::string t(text);
  std::transform(t.begin(), t.end(), t.begin(), [](unsigned char c) { return std::tolower(c); });
  if (t == "1" || t == "true" || t == "yes" || t == "on") return true;
  if (t.empty() || t == "0" || t == "false" || t == "no" || t == "off") return false;
  return std::nullopt;
}

Config Config::from_env(EnvOverrides overridden) {
  Config c;
  c.dir = default_cache_dir(&c.no_dir_reason);
  if (const char* v = std::getenv("MOEJIT_CACHE_MAX_BYTES"); v && *v && !overridden.max_bytes) {
    auto bytes = parse_byte_size(v);
    if (!bytes)
      throw std::invalid_argument(std::string("MOEJIT_CACHE_MAX_BYTES: '") + v +
                                  "' is not a size (bytes, or with a K, M, G or T suffix; 0 = no cap)");
    c.max_bytes = *bytes;
  }
  if (const char* v = std::getenv("MOEJIT_NO_JIT"); v && !overridden.no_jit) {
    auto flag = parse_flag(v);
    if (!flag) throw std::invalid_argument(std::string("MOEJIT_NO_JIT: '") + v + "' is not 0 or 1");
    c.no_jit = *flag;
  }
  return c;
}

}  // namespace moejit::cache
