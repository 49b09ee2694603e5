// The PTX reader behind Module::parse. It reads only as much structure as the
// passes need (header, entries, formals, performance directives, body
// statements) and keeps everything else as opaque text, so any PTX a compiler
// emits reads back byte for byte. Input it cannot read is a ParseError with
// file:line:col, never undefined behaviour: the mutation test feeds it
// thousands of corrupted modules.
#include <llvm/Support/MemoryBuffer.h>

#include <set>

#include "ptx_passes/ptx_module.hpp"
#include "ptx_passes/ptx_scanner.hpp"

namespace moejit::ptx {

class Parser : private Scanner {
 public:
  Parser(Module& m, const char* begin, const char* end) : Scanner(m, end), m_(m), p_(begin) {}

  void run() {
    for (;;) {
      const char* start = p_;
      p_ = skip_trivia(p_);
      const llvm::StringRef leading = span(start, p_);
      if (p_ == end()) {
        m_.trailing_ = leading;
        return;
      }
      Decl d;
      d.leading = leading;
      d.loc = loc(p_);
      const llvm::StringRef w = word(p_);
      if (w == ".version" || w == ".target" || w == ".address_size") {
        d.kind = w == ".version" ? DeclKind::version : w == ".target" ? DeclKind::target : DeclKind::address_size;
        d.text = header_directive(w);
      } else if (w == ".file" || w == ".loc") {
        d.text = span(p_, line_end(p_));
        p_ = d.text.end();
      } else if (starts_entry()) {
        d.kind = DeclKind::entry;
        d.entry = m_.entries_.size();
        m_.entries_.push_back(entry());
      } else {
        d.text = span(p_, declaration_end(p_));
        p_ = d.text.end();
      }
      m_.decls_.push_back(std::move(d));
    }
  }

 private:
  Module& m_;
  const char* p_;

  llvm::StringRef header_directive(llvm::StringRef w) {
    const char* e = line_end(p_);
    const char* q = skip_blanks(p_ + w.size());
    if (q == p_ + w.size()) fail(q, "expected an operand after '" + w.str() + "'");
    if (w == ".version") {
      number(q);
      if (q >= e || *q != '.') fail(q, "expected '.version MAJOR.MINOR'");
      ++q;
      number(q);
    } else if (w == ".address_size") {
      const std::int64_t bits = number(q);
      if (bits != 32 && bits != 64) fail(p_, ".address_size must be 32 or 64");
    } else {
      for (;;) {  // .target name[, name]*
        const llvm::StringRef t = identifier(q);
        if (t.empty()) fail(q, "expected a target name");
        q = skip_blanks(t.end());
        if (q >= e || *q != ',') break;
        q = skip_blanks(q + 1);
      }
    }
    if (skip_blanks(q) != e) fail(q, "unexpected text after '" + w.str() + "'");
    const llvm::StringRef text = span(p_, e);
    p_ = e;
    return text;
  }

  bool starts_entry() const {
    for (const char* p = p_;;) {
      const llvm::StringRef w = word(p);
      if (w == ".entry") return true;
      if (w != ".visible" && w != ".weak" && w != ".extern") return false;
      p = skip_trivia(w.end());
    }
  }

  Entry entry() {
    Entry e;
    e.loc = loc(p_);
    const char* start = p_;
    const char* p = p_;
    while (word(p) != ".entry") p = skip_trivia(word(p).end());
    p = skip_trivia(p + 6);
    const llvm::StringRef name = identifier(p);
    if (name.empty()) fail(p, "expected the entry name after '.entry'");
    e.name = name.str();
    const char* q = skip_trivia(name.end());
    if (q < end() && *q == '(') {
      e.head = span(start, q + 1);
      p_ = q + 1;
      params(e);
    } else {
      e.head = span(start, name.end());
      p_ = name.end();
    }
    directives(e);
    body(e);
    return e;
  }

  void params(Entry& e) {
    const char* sep = p_;
    const char* q = skip_trivia(p_);
    if (q < end() && *q == ')') {
      e.params_close = span(sep, q + 1);
      p_ = q + 1;
      return;
    }
    for (;;) {
      Param prm = param(q);
      prm.leading = span(sep, q);
      sep = prm.text.end();
      e.params.push_back(std::move(prm));
      q = skip_trivia(sep);
      if (q < end() && *q == ')') {
        e.params_close = span(sep, q + 1);
        p_ = q + 1;
        return;
      }
      if (q == end() || *q != ',') fail(q, "expected ',' or ')' after formal '" + e.params.back().name + "'");
      q = skip_trivia(q + 1);
    }
  }

  static bool is_type(llvm::StringRef w) {
    static const std::set<llvm::StringRef> types = {".b8",   ".b16",    ".b32",    ".b64",        ".b128",   ".u8",
                                                    ".u16",  ".u32",    ".u64",    ".s8",         ".s16",    ".s32",
                                                    ".s64",  ".f16",    ".f32",    ".f64",        ".pred",   ".f16x2",
                                                    ".bf16", ".bf16x2", ".texref", ".samplerref", ".surfref"};
    return types.count(w) != 0;
  }

  Param param(const char* start) {
    if (word(start) != ".param") fail(start, "expected '.param'");
    Param prm;
    prm.loc = loc(start);
    const char* p = skip_trivia(start + 6);
    for (;;) {
      const llvm::StringRef w = word(p);
      if (w == ".align") {
        p = skip_trivia(w.end());
        const char* at = p;
        const std::int64_t a = number(p);
        // A power of two the u32 field holds: 2^32 + 128 was read as 128, which the validate pass then accepted.
        if (a < 1 || a > (std::int64_t{1} << 31) || (a & (a - 1)) != 0)
          fail(at, "'.align' must be a power of two (1 to 2^31)");
        (prm.type.empty() ? prm.align : prm.pointer_align) = a;
        if (!prm.type.empty() && !prm.pointer) fail(w.begin(), "'.align' after the type needs '.ptr'");
        p = skip_trivia(p);
        continue;
      } else if (w == ".ptr") {
        if (prm.type.empty() || prm.pointer) fail(w.begin(), "unexpected '.ptr'");
        prm.pointer = true;
      } else if (prm.pointer && (w == ".global" || w == ".shared" || w == ".const" || w == ".local")) {
        prm.pointer_space = w.str();
      } else if (is_type(w)) {
        if (!prm.type.empty()) fail(w.begin(), "a formal has one type");
        prm.type = w.str();
      } else {
        break;
      }
      p = skip_trivia(w.end());
    }
    if (prm.type.empty()) fail(p, "expected the formal's type");
    const llvm::StringRef name = identifier(p);
    if (name.empty()) fail(p, "expected the formal's name");
    prm.name = name.str();
    p = name.end();
    if (p < end() && *p == '[') {
      ++p;
      prm.array_size = static_cast<std::uint64_t>(number(p));
      if (p == end() || *p != ']') fail(p, "expected ']'");
      ++p;
    }
    prm.text = span(start, p);
    return prm;
  }

  void directives(Entry& e) {
    static const std::set<llvm::StringRef> with_values = {
        ".maxntid", ".reqntid", ".minnctapersm", ".maxnctapersm", ".maxnreg", ".reqnctapercluster", ".maxclusterrank"};
    static const std::set<llvm::StringRef> flags = {".noreturn", ".explicitcluster", ".blocksareclusters"};
    for (;;) {
      const char* start = p_;
      const char* q = skip_trivia(p_);
      if (q == end()) fail(loc_ptr(e), "entry '" + e.name + "' has no body");
      if (*q == '{') {
        e.body_open = span(start, q + 1);
        p_ = q + 1;
        return;
      }
      const llvm::StringRef w = word(q);
      PerfDirective d;
      d.leading = span(start, q);
      d.loc = loc(q);
      d.name = w.str();
      const char* p = w.end();
      if (with_values.count(w)) {
        p = skip_blanks(p);
        d.values.push_back(number(p));
        for (const char* c = skip_blanks(p); c < end() && *c == ',';) {
          p = skip_blanks(c + 1);
          d.values.push_back(number(p));
          c = skip_blanks(p);
        }
      } else if (w == ".pragma") {
        p = statement_end(p);
      } else if (!flags.count(w)) {
        const std::string what = w.empty() ? std::string(1, *q) : w.str();
        fail(q, "unexpected '" + what + "' between the formals and the body of entry '" + e.name + "'");
      }
      d.text = span(q, p);
      p_ = p;
      e.directives.push_back(std::move(d));
    }
  }

  static const char* loc_ptr(const Entry& e) { return e.loc.getPointer(); }

  void body(Entry& e) {
    int depth = 0;
    for (;;) {
      const char* start = p_;
      const char* q = skip_trivia(p_);
      if (q == end()) fail(loc_ptr(e), "entry '" + e.name + "': missing '}' at the end of its body");
      Statement s;
      s.leading = span(start, q);
      s.loc = loc(q);
      const char* p;
      if (*q == '}') {
        if (depth == 0) {
          e.body_close = span(start, q + 1);
          p_ = q + 1;
          return;
        }
        --depth;
        s.kind = StatementKind::block_close;
        p = q + 1;
      } else if (*q == '{') {
        ++depth;
        s.kind = StatementKind::block_open;
        p = q + 1;
      } else if (*q == '.') {
        s.kind = StatementKind::directive;
        const llvm::StringRef w = word(q);
        p = (w == ".loc" || w == ".file") ? line_end(q) : statement_end(q);
      } else if (const llvm::StringRef id = identifier(q);
                 !id.empty() && id.end() < end() && *id.end() == ':' && !at(id.end(), "::")) {
        s.kind = StatementKind::label;
        p = id.end() + 1;
      } else {
        s.kind = StatementKind::instruction;
        p = statement_end(q);
      }
      s.text = span(q, p);
      p_ = p;
      e.body.push_back(std::move(s));
    }
  }
};

Module Module::parse(std::string_view text, std::string_view buffer_name) {
  Module m;
  m.sources_ = std::make_unique<llvm::SourceMgr>();
  auto buffer = llvm::MemoryBuffer::getMemBufferCopy(llvm::StringRef(text.data(), text.size()),
                                                     llvm::StringRef(buffer_name.data(), buffer_name.size()));
  const llvm::StringRef bytes = buffer->getBuffer();
  m.sources_->AddNewSourceBuffer(std::move(buffer), llvm::SMLoc());
  m.buffer_ = std::string_view(bytes.data(), bytes.size());
  Parser(m, bytes.begin(), bytes.end()).run();
  return m;
}

}  // namespace moejit::ptx
