#pragma once
// JSON read from outside the process (a cache entry's meta.json, a bundle's
// manifest, stats.json, a model configuration file) is parsed within bounds:
// a size, a nesting depth, and no repeated keys.
//
// The depth bound is what keeps every later step safe: nlohmann's parser is
// iterative, but dump(), comparison and copies recurse, so a value nested 100k
// deep overflows the stack wherever it is printed or compared, and dump(2)
// of a 20k-deep value is quadratic in size. A repeated key is refused because
// nlohmann silently keeps the last one, so a person and moejit reading the
// same file could disagree on what it says.

#include <cstdint>
#include <stdexcept>
#include <string_view>

#include <nlohmann/json.hpp>

namespace moejit::cache {

// Far above what moejit writes (a kernel's meta.json nests 5 deep, a config
// file 2) and far below what recursion can take.
inline constexpr int k_max_json_depth = 16;

struct JsonLimits {
  std::uint64_t max_bytes = 0;
  int max_depth = k_max_json_depth;
};

// What is wrong with the text, as a short message that does not name its
// source: "nested deeper than 16 levels", "the key \"x\" appears twice",
// "not valid JSON: syntax error ... at line 1, column 5". Callers prefix the file.
class JsonInputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Throws JsonInputError.
nlohmann::json parse_json(std::string_view text, const JsonLimits& limits);

// Whether `value` has more than `max_depth` nested arrays and objects
// (iterative, so safe on any value).
bool nests_deeper_than(const nlohmann::json& value, int max_depth);

}  // namespace moejit::cache
