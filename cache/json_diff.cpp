#include "cache/json_diff.hpp"

#include <set>

#include "cache/printable.hpp"

namespace moejit::cache {
namespace {
std::optional<JsonDifference> diff(const nlohmann::json& a, const nlohmann::json& b, const std::string& path) {
  if (a.is_object() && b.is_object()) {
    std::set<std::string> keys;
    for (const auto& [k, v] : a.items()) keys.insert(k);
    for (const auto& [k, v] : b.items()) keys.insert(k);
    for (const std::string& k : keys) {
      const std::string sub = path.empty() ? k : path + "." + k;
      const bool in_a = a.contains(k), in_b = b.contains(k);
      if (!in_a || !in_b)
        return JsonDifference{sub, in_a ? json_excerpt(a.at(k)) : "<absent>",
                              in_b ? json_excerpt(b.at(k)) : "<absent>"};
      if (auto d = diff(a.at(k), b.at(k), sub)) return d;
    }
    return std::nullopt;
  }
  if (a.is_array() && b.is_array() && a.size() == b.size()) {
    for (size_t i = 0; i < a.size(); ++i)
      if (auto d = diff(a[i], b[i], path + "[" + std::to_string(i) + "]")) return d;
    return std::nullopt;
  }
  if (a == b) return std::nullopt;
  return JsonDifference{path, json_excerpt(a), json_excerpt(b)};
}
}  // namespace

std::optional<JsonDifference> first_difference(const nlohmann::json& left, const nlohmann::json& right) {
  return diff(left, right, "");
}

}  // namespace moejit::cache
