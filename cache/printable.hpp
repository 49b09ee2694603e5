#pragma once
// Input quoted in messages: a short excerpt with its control bytes escaped, so
// an error can neither flood a terminal (a 100 MB value) nor drive it (an ESC
// sequence in a model name or a meta.json summary).

#include <cstddef>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

namespace moejit::cache {

// `text` with every byte outside printable ASCII, and the backslash, escaped
// as \xNN; past `max` bytes of input it is cut, and the cut says how long the
// whole was: `abc... (12345 bytes)`.
std::string printable(std::string_view text, size_t max = 64);
// printable() in double quotes.
std::string quote(std::string_view text, size_t max = 64);
// A JSON value for a message: a number, boolean or null as JSON, a string
// quote(), an array or object by its size ("an array of 3 elements"). Never
// recursive, never long, whatever the value.
std::string json_excerpt(const nlohmann::json& value, size_t max = 64);
// A whole message for a terminal: control bytes other than newline and tab
// escaped (a backslash is left as it is: excerpts in it are escaped already),
// at most `max` bytes of it.
std::string printable_message(std::string_view text, size_t max = 16384);

}  // namespace moejit::cache
