#pragma once
// A light model of a PTX module: the header, the module-level declarations,
// and each entry's formals, performance directives and body statements.
//
// The model partitions the input text: every byte belongs to exactly one
// piece (the whitespace and comments before an element are its `leading`
// text), so printing an untouched module reproduces the input byte for byte.
// A pass rewrites a piece's text or inserts a new piece; everything it does
// not touch keeps the original bytes. Each piece remembers where it came from
// (an SMLoc into the parsed buffer, owned by an llvm::SourceMgr), so a
// diagnostic can name file:line:col even after a rewrite.

#include <llvm/ADT/StringRef.h>
#include <llvm/Support/SMLoc.h>
#include <llvm/Support/SourceMgr.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace moejit::ptx {

// The input is not PTX this model can read. The message carries
// file:line:col and the offending line.
class ParseError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class StatementKind {
  instruction,  // `[@%p] opcode operands;`
  label,        // `$L__BB0_2:`
  directive,    // `.reg ...;`, `.shared ...;`, `.loc ...` (to the end of its line)
  block_open,   // `{` of a nested scope (inline asm wraps its own `.reg`s in one)
  block_close,  // `}` of a nested scope
};

// One statement of an entry body.
struct Statement {
  llvm::StringRef leading;  // whitespace and comments before it
  llvm::StringRef text;     // the statement, with its `;` for instructions and declarations
  llvm::SMLoc loc;          // where it was read (a written statement: the statement it replaced or follows)
  StatementKind kind = StatementKind::instruction;
  bool written = false;  // text a pass wrote

  // The opcode of an instruction ("ld.param.u64"), without the guard predicate; empty otherwise.
  llvm::StringRef opcode() const;
  // An instruction's operand text: after the opcode, before the final `;`.
  llvm::StringRef operands() const;
};

// One formal of an entry: `.param [.align N] .type [.ptr [.space] [.align M]] name[[N]]`.
struct Param {
  llvm::StringRef leading;  // whitespace, comments and the `,` before it
  llvm::StringRef text;     // `.param .u64 k_param_0`
  llvm::SMLoc loc;
  bool written = false;
  std::string name;
  std::string type;                         // ".u64", ".b8", ...
  unsigned align = 0;                       // the formal's own `.align` (0: none)
  bool pointer = false;                     // `.ptr` (NVVM 20 marks pointer formals)
  std::string pointer_space;                // `.global` etc. after `.ptr`; empty: generic
  unsigned pointer_align = 0;               // `.align` after `.ptr`: the alignment of what it points to
  std::optional<std::uint64_t> array_size;  // `name[N]`

  // "`.align 128 .b8 [128]`"-style summary of the declaration without the name.
  std::string declaration() const;
};

// A performance-tuning directive between the formals and the body.
struct PerfDirective {
  llvm::StringRef leading;
  llvm::StringRef text;  // `.maxntid 256, 1, 1`
  llvm::SMLoc loc;
  bool written = false;
  std::string name;  // ".maxntid", ".minnctapersm", ...
  std::vector<std::int64_t> values;
};

struct Entry {
  llvm::StringRef head;  // `.visible .entry name(`: linkage, name and the opening parenthesis
  llvm::SMLoc loc;
  std::string name;
  std::vector<Param> params;
  llvm::StringRef params_close;  // whitespace and `)`; empty when the entry has no formal list
  std::vector<PerfDirective> directives;
  llvm::StringRef body_open;  // whitespace and `{`
  std::vector<Statement> body;
  llvm::StringRef body_close;  // whitespace, comments and `}`

  const Param* find_param(std::string_view name) const;
  std::vector<const PerfDirective*> find_directives(std::string_view name) const;
};

enum class DeclKind { version, target, address_size, entry, other };

// A module-level element: a header directive, an entry, or any other
// declaration (.global/.shared variables, .func, .extern, .file, .section).
struct Decl {
  llvm::StringRef leading;
  llvm::StringRef text;  // empty for entries, which print from `entry`
  llvm::SMLoc loc;
  DeclKind kind = DeclKind::other;
  std::size_t entry = 0;  // index into Module::entries() for DeclKind::entry
  bool written = false;
};

class Module {
 public:
  // Parses `text`, naming the buffer `buffer_name` in diagnostics. Throws ParseError.
  static Module parse(std::string_view text, std::string_view buffer_name);

  Module(Module&&) noexcept;
  Module& operator=(Module&&) noexcept;
  ~Module();

  // The module text: the input, with every rewrite applied.
  std::string print() const;

  const std::vector<Decl>& decls() const { return decls_; }
  std::vector<Decl>& decls() { return decls_; }
  const std::vector<Entry>& entries() const { return entries_; }
  std::vector<Entry>& entries() { return entries_; }
  std::vector<const Decl*> find_decls(DeclKind kind) const;
  std::vector<const Entry*> find_entries(std::string_view name) const;

  // The toolchain that wrote the module, from NVRTC's header comment
  // ("Cuda compilation tools, release 13.0, ..." gives "13.0"); empty if absent.
  std::string toolchain_release() const;

  std::string_view buffer_name() const;
  llvm::SMLoc start() const;  // the first byte of the buffer
  // "file:line:col".
  std::string location(llvm::SMLoc loc) const;
  // A diagnostic in the LLVM format: "file:line:col: note: message", the source line and a caret.
  std::string diagnostic(llvm::SMLoc loc, llvm::SourceMgr::DiagKind kind, const std::string& message) const;

  // Keeps `text` alive as long as the module; passes write through this.
  llvm::StringRef save(std::string text);
  // A new statement written after body[index] with the same indentation.
  Statement& insert_statement_after(Entry& entry, std::size_t index, std::string text);
  // A new performance directive after the last one (or after the formal list).
  PerfDirective& append_directive(Entry& entry, std::string text, std::string name, std::vector<std::int64_t> values);

 private:
  Module();
  friend class Parser;

  std::unique_ptr<llvm::SourceMgr> sources_;
  std::string_view buffer_;  // the parsed text, inside sources_
  std::vector<Decl> decls_;
  std::vector<Entry> entries_;
  llvm::StringRef trailing_;         // whitespace and comments after the last declaration
  std::deque<std::string> written_;  // text that passes wrote (a deque never moves its elements)
};

}  // namespace moejit::ptx
