#include "cache/bounded_json.hpp"

#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "cache/printable.hpp"

namespace moejit::cache {

nlohmann::json parse_json(std::string_view text, const JsonLimits& limits) {
  if (text.size() > limits.max_bytes)
    throw JsonInputError(std::to_string(text.size()) + " bytes, over the limit of " + std::to_string(limits.max_bytes));
  using Event = nlohmann::json::parse_event_t;
  // The keys seen in each open object (nullopt for an open array).
  std::vector<std::optional<std::set<std::string>>> open;
  const auto check = [&](int depth, Event event, nlohmann::json& parsed) {
    switch (event) {
      case Event::object_start:
      case Event::array_start:
        // `depth` counts the containers around this one.
        if (depth + 1 > limits.max_depth)
          throw JsonInputError("nested deeper than " + std::to_string(limits.max_depth) + " levels");
        open.emplace_back(event == Event::object_start ? std::optional<std::set<std::string>>(std::in_place)
                                                       : std::nullopt);
        break;
      case Event::object_end:
      case Event::array_end:
        if (!open.empty()) open.pop_back();
        break;
      case Event::key:
        if (!open.empty() && open.back() && !open.back()->insert(parsed.get<std::string>()).second)
          throw JsonInputError("the key " + quote(parsed.get_ref<const std::string&>()) + " appears twice");
        break;
      case Event::value: break;
    }
    return true;
  };
  try {
    return nlohmann::json::parse(text.begin(), text.end(), check);
  } catch (const nlohmann::json::exception& e) {
    // "[json.exception.parse_error.101] parse error at line 1, ...": the
    // library's tag says nothing to a user; its last-read token can be long.
    std::string_view what = e.what();
    if (const size_t tag_end = what.find("] "); what.rfind("[json.exception.", 0) == 0 && tag_end != what.npos)
      what.remove_prefix(tag_end + 2);
    throw JsonInputError("not valid JSON: " + printable(what, 200));
  }
}

bool nests_deeper_than(const nlohmann::json& value, int max_depth) {
  std::vector<std::pair<const nlohmann::json*, int>> todo = {{&value, 1}};
  while (!todo.empty()) {
    const auto [v, depth] = todo.back();
    todo.pop_back();
    if (!v->is_structured()) continue;
    if (depth > max_depth) return true;
    for (const auto& child : *v) todo.emplace_back(&child, depth + 1);
  }
  return false;
}

}  // namespace moejit::cache
