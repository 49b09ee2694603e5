#pragma once
// The command-line half of `moejit precompile`: the batch and target lists.
// What gets compiled is jit/precompile.hpp's.

#include <string_view>
#include <vector>

#include "codegen/target.hpp"

namespace moejit::tools {

// "1-256", "1,2,4,8", "1-8,16,32": every batch size named, sorted, distinct (a
// range is all of its sizes: a server meets any B). Throws UsageError.
std::vector<int> parse_batches(std::string_view text);
// "sm_90a,sm_120a". Throws UsageError naming an unknown target.
std::vector<codegen::Target> parse_targets(std::string_view text);

}  // namespace moejit::tools
