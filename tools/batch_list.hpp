#pragma once
// Batch lists on the command line: "8", "1,3,8", and "1-256" (the powers of
// two in the range: 1, 2, 4, ..., 256), mixed freely ("1,3,16-64"). Shared
// by the commands that take --batches.

#include <string>
#include <vector>

namespace moejit::tools {

// Parses `text` for option `--<flag>`; every value must lie in [lo, hi].
// Duplicates are dropped, the first occurrence keeps its place. Throws
// UsageError naming the flag, the bad item and the range.
std::vector<int> parse_batch_list(const std::string& flag, const std::string& text, int lo, int hi);

}  // namespace moejit::tools
