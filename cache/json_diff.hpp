#pragma once
// The first field where two JSON documents differ, by path: what lets an
// import refuse a bundle "because toolchain.nvrtc_build differs" instead of
// "because the identity differs".

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace moejit::cache {

struct JsonDifference {
  std::string path;         // "toolchain.nvrtc_build", "nvrtc_options[2]"; "" for the root
  std::string left, right;  // short excerpts of the two values (printable.hpp), "<absent>" when missing
};

std::optional<JsonDifference> first_difference(const nlohmann::json& left, const nlohmann::json& right);

}  // namespace moejit::cache
