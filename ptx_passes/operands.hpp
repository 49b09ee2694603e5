#pragma once
// Token-level questions about statement text, shared by the passes: does a
// statement name a register or a symbol, and as what. Whole tokens only
// (`%rd1` never matches inside `%rd10`), comments ignored.

#include <llvm/ADT/StringRef.h>

#include "ptx_passes/ptx_module.hpp"

namespace moejit::ptx {

// How many times `token` (a register like "%rd2" or a symbol) occurs in `text` as a whole token.
int count_token(llvm::StringRef text, llvm::StringRef token);

// The operands of an instruction, split at top-level commas (not inside {} or []), trimmed.
std::vector<llvm::StringRef> split_operands(llvm::StringRef operands);

// Whether instruction `s` writes `reg`: it names it in its first operand,
// which is the destination unless it is an address (`[...]`).
bool writes_register(const Statement& s, llvm::StringRef reg);

// Whether `s` reads `reg`: it names it anywhere but as the destination.
bool reads_register(const Statement& s, llvm::StringRef reg);

}  // namespace moejit::ptx
