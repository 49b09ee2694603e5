#pragma once
// The lexical layer under the PTX parser (internal to ptx_passes): whitespace
// and comments, strings, words, numbers, and the ends of statements and
// declarations. Every read is bounds-checked against the end of the buffer
// and every malformed token is a ParseError at its file:line:col.

#include <llvm/ADT/StringExtras.h>
#include <llvm/ADT/StringRef.h>
#include <llvm/Support/SMLoc.h>

#include <cstdint>
#include <string>

#include "ptx_passes/ptx_module.hpp"

namespace moejit::ptx {

class Scanner {
 public:
  Scanner(const Module& m, const char* end) : diagnostics_(m), end_(end) {}

  static llvm::SMLoc loc(const char* p) { return llvm::SMLoc::getFromPointer(p); }
  static llvm::StringRef span(const char* a, const char* b) { return {a, static_cast<size_t>(b - a)}; }
  static bool space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
  static bool ident_start(char c) { return llvm::isAlpha(c) || c == '_' || c == '$' || c == '%'; }
  static bool ident_char(char c) { return llvm::isAlnum(c) || c == '_' || c == '$'; }
  static bool word_char(char c) { return ident_char(c) || c == '.' || c == '%' || c == ':'; }

  [[noreturn]] void fail(const char* at, const std::string& message) const;
  // Whether the buffer holds `s` at p.
  bool at(const char* p, llvm::StringRef s) const {
    return static_cast<size_t>(end_ - p) >= s.size() && llvm::StringRef(p, s.size()) == s;
  }

  // Past whitespace and comments. An unterminated block comment is an error.
  const char* skip_trivia(const char* p) const;
  // Past spaces and tabs only.
  const char* skip_blanks(const char* p) const;
  // Past a string literal that starts at p (on `"`). It may not span lines.
  const char* skip_string(const char* p) const;
  // A run of word characters: directives (".param"), opcodes, names.
  llvm::StringRef word(const char* p) const;
  // A PTX identifier at p, or empty.
  llvm::StringRef identifier(const char* p) const;
  // A decimal number at p (advancing p); an error if there is none.
  std::int64_t number(const char*& p) const;

  // The end of a directive that ends with its line (.version, .file, .loc):
  // before a trailing comment and trailing blanks.
  const char* line_end(const char* p) const;
  // The end of a `;`-terminated declaration, or of a brace-delimited block
  // (a .func body, a .section, an initializer) and an optional `;` after it.
  const char* declaration_end(const char* start) const;
  // The end of an instruction or body declaration: its `;`. Braces inside
  // (vector operands, initializers) must balance before it.
  const char* statement_end(const char* start) const;

 protected:
  const char* end() const { return end_; }

 private:
  const Module& diagnostics_;
  const char* end_;
};

}  // namespace moejit::ptx
