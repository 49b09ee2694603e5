#pragma once
// A line diff in the unified format (`diff -u`), for showing what each PTX
// pass changed. LLVM Support has no diff printer.

#include <string>
#include <string_view>

namespace moejit::ptx {

// The unified diff from `before` to `after` with `context` lines around each
// change; empty when the texts are equal. Minimal (Myers) for the small
// edits passes make; past a few thousand differing lines it falls back to
// replacing the differing middle wholesale, which is still a correct diff.
std::string unified_diff(std::string_view before, std::string_view after, std::string_view label_before,
                         std::string_view label_after, int context = 3);

}  // namespace moejit::ptx
