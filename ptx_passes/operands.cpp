#include "ptx_passes/operands.hpp"

#include <llvm/ADT/StringExtras.h>

namespace moejit::ptx {
namespace {
bool ident_char(char c) {
  return llvm::isAlnum(c) || c == '_' || c == '$' || c == '%';
}
}  // namespace

int count_token(llvm::StringRef text, llvm::StringRef token) {
  if (token.empty()) return 0;
  int n = 0;
  for (size_t i = 0; i < text.size();) {
    if (text.substr(i).starts_with("//")) {
      const size_t nl = text.find('\n', i);
      i = nl == llvm::StringRef::npos ? text.size() : nl;
      continue;
    }
    if (text.substr(i).starts_with("/*")) {
      const size_t close = text.find("*/", i + 2);
      i = close == llvm::StringRef::npos ? text.size() : close + 2;
      continue;
    }
    if (text.substr(i).starts_with(token) && (i == 0 || !ident_char(text[i - 1])) &&
        (i + token.size() == text.size() || !ident_char(text[i + token.size()]))) {
      ++n;
      i += token.size();
      continue;
    }
    ++i;
  }
  return n;
}

std::vector<llvm::StringRef> split_operands(llvm::StringRef operands) {
  std::vector<llvm::StringRef> out;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i < operands.size(); ++i) {
    const char c = operands[i];
    if (c == '{' || c == '[' || c == '(') ++depth;
    if (c == '}' || c == ']' || c == ')') --depth;
    if (c == ',' && depth == 0) {
      out.push_back(operands.slice(start, i).trim());
      start = i + 1;
    }
  }
  if (!operands.trim().empty()) out.push_back(operands.drop_front(start).trim());
  return out;
}

bool writes_register(const Statement& s, llvm::StringRef reg) {
  if (s.kind != StatementKind::instruction) return false;
  const std::vector<llvm::StringRef> ops = split_operands(s.operands());
  return !ops.empty() && !ops[0].starts_with("[") && count_token(ops[0], reg) > 0;
}

bool reads_register(const Statement& s, llvm::StringRef reg) {
  if (s.kind != StatementKind::instruction) return false;
  const std::vector<llvm::StringRef> ops = split_operands(s.operands());
  for (size_t i = 0; i < ops.size(); ++i) {
    const bool destination = i == 0 && !ops[0].starts_with("[");
    if (!destination && count_token(ops[i], reg) > 0) return true;
  }
  // The guard predicate (`@%p1 bra ...`) is read too.
  return s.text.starts_with("@") && count_token(s.text.take_front(s.text.find_first_of(" \t\r\n")), reg) > 0;
}

}  // namespace moejit::ptx
