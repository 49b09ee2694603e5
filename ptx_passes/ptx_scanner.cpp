#include "ptx_passes/ptx_scanner.hpp"

namespace moejit::ptx {

void Scanner::fail(const char* at, const std::string& message) const {
  throw ParseError(diagnostics_.diagnostic(loc(at), llvm::SourceMgr::DK_Error, message));
}

const char* Scanner::skip_trivia(const char* p) const {
  for (;;) {
    while (p < end_ && space(*p)) ++p;
    if (at(p, "//")) {
      while (p < end_ && *p != '\n') ++p;
    } else if (at(p, "/*")) {
      const char* open = p;
      p += 2;
      while (p < end_ && !at(p, "*/")) ++p;
      if (p == end_) fail(open, "unterminated comment");
      p += 2;
    } else {
      return p;
    }
  }
}

const char* Scanner::skip_blanks(const char* p) const {
  while (p < end_ && (*p == ' ' || *p == '\t')) ++p;
  return p;
}

const char* Scanner::skip_string(const char* p) const {
  const char* open = p++;
  while (p < end_ && *p != '"' && *p != '\n') p += (*p == '\\' && p + 1 < end_) ? 2 : 1;
  if (p >= end_ || *p != '"') fail(open, "unterminated string");
  return p + 1;
}

llvm::StringRef Scanner::word(const char* p) const {
  const char* e = p;
  while (e < end_ && word_char(*e)) ++e;
  return span(p, e);
}

llvm::StringRef Scanner::identifier(const char* p) const {
  if (p == end_ || !ident_start(*p)) return {};
  const char* e = p + 1;
  while (e < end_ && ident_char(*e)) ++e;
  return span(p, e);
}

std::int64_t Scanner::number(const char*& p) const {
  const char* s = p;
  while (p < end_ && llvm::isDigit(*p)) ++p;
  if (p == s) fail(s, "expected a number");
  if (p - s > 18) fail(s, "number out of range");
  std::int64_t v = 0;
  for (const char* d = s; d < p; ++d) v = v * 10 + (*d - '0');
  return v;
}

const char* Scanner::line_end(const char* p) const {
  const char* e = p;
  while (e < end_ && *e != '\n' && !at(e, "//") && !at(e, "/*")) e = *e == '"' ? skip_string(e) : e + 1;
  while (e > p && space(e[-1])) --e;
  return e;
}

const char* Scanner::declaration_end(const char* start) const {
  int depth = 0;
  for (const char* p = start;;) {
    if (p == end_) fail(start, "unterminated declaration: missing ';' or '}'");
    if (*p == '"') {
      p = skip_string(p);
      continue;
    }
    if (at(p, "//") || at(p, "/*")) {
      p = skip_trivia(p);
      continue;
    }
    if (*p == '{') ++depth;
    if (*p == '}') {
      if (depth == 0) fail(p, "unexpected '}'");
      if (--depth == 0) {
        const char* q = skip_trivia(p + 1);
        return q < end_ && *q == ';' ? q + 1 : p + 1;
      }
    }
    if (*p == ';' && depth == 0) return p + 1;
    ++p;
  }
}

const char* Scanner::statement_end(const char* start) const {
  int depth = 0;
  for (const char* p = start;;) {
    if (p == end_) fail(start, "unterminated statement: missing ';'");
    if (*p == '"') {
      p = skip_string(p);
      continue;
    }
    if (at(p, "//") || at(p, "/*")) {
      p = skip_trivia(p);
      continue;
    }
    if (*p == '{') ++depth;
    if (*p == '}' && --depth < 0) fail(p, "unexpected '}' inside a statement (a missing ';'?)");
    if (*p == ';') {
      if (depth != 0) fail(start, "unbalanced '{' in statement");
      return p + 1;
    }
    ++p;
  }
}

}  // namespace moejit::ptx
