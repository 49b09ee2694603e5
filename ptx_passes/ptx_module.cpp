#include "ptx_passes/ptx_module.hpp"

#include <fmt/format.h>
#include <llvm/ADT/StringExtras.h>
#include <llvm/Support/raw_ostream.h>

#include <algorithm>

namespace moejit::ptx {
namespace {
bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

// The indentation of a statement: the whitespace after the last newline of its leading text.
llvm::StringRef indentation(llvm::StringRef leading) {
  const size_t nl = leading.rfind('\n');
  llvm::StringRef tail = nl == llvm::StringRef::npos ? leading : leading.drop_front(nl + 1);
  size_t n = 0;
  while (n < tail.size() && (tail[n] == ' ' || tail[n] == '\t')) ++n;
  return tail.take_front(n);
}
}  // namespace

llvm::StringRef Statement::opcode() const {
  if (kind != StatementKind::instruction) return {};
  llvm::StringRef t = text;
  if (t.starts_with("@")) {
    size_t i = 1;
    while (i < t.size() && !is_space(t[i])) ++i;
    t = t.drop_front(i);
    while (!t.empty() && is_space(t.front())) t = t.drop_front();
  }
  size_t n = 0;
  while (n < t.size() && !is_space(t[n]) && t[n] != ';' && t[n] != '{' && t[n] != '[' && t[n] != ',') ++n;
  return t.take_front(n);
}

llvm::StringRef Statement::operands() const {
  const llvm::StringRef op = opcode();
  if (op.empty()) return {};
  llvm::StringRef rest = text.substr(static_cast<size_t>(op.end() - text.begin()));
  if (rest.ends_with(";")) rest = rest.drop_back();
  return rest.trim();
}

std::string Param::declaration() const {
  std::string out = align ? fmt::format(".align {} {}", align, type) : type;
  if (pointer) {
    out += " .ptr";
    if (!pointer_space.empty()) out += " " + pointer_space;
    if (pointer_align) out += fmt::format(" .align {}", pointer_align);
  }
  if (array_size) out += fmt::format(" [{}]", *array_size);
  return out;
}

const Param* Entry::find_param(std::string_view n) const {
  for (const Param& p : params)
    if (p.name == n) return &p;
  return nullptr;
}

std::vector<const PerfDirective*> Entry::find_directives(std::string_view n) const {
  std::vector<const PerfDirective*> out;
  for (const PerfDirective& d : directives)
    if (d.name == n) out.push_back(&d);
  return out;
}

Module::Module() = default;
Module::Module(Module&&) noexcept = default;
Module& Module::operator=(Module&&) noexcept = default;
Module::~Module() = default;

std::string Module::print() const {
  std::string out;
  out.reserve(buffer_.size() + 256);
  auto add = [&out](llvm::StringRef s) { out.append(s.data(), s.size()); };
  for (const Decl& d : decls_) {
    add(d.leading);
    if (d.kind != DeclKind::entry) {
      add(d.text);
      continue;
    }
    const Entry& e = entries_[d.entry];
    add(e.head);
    for (const Param& p : e.params) add(p.leading), add(p.text);
    add(e.params_close);
    for (const PerfDirective& p : e.directives) add(p.leading), add(p.text);
    add(e.body_open);
    for (const Statement& s : e.body) add(s.leading), add(s.text);
    add(e.body_close);
  }
  add(trailing_);
  return out;
}

std::vector<const Decl*> Module::find_decls(DeclKind kind) const {
  std::vector<const Decl*> out;
  for (const Decl& d : decls_)
    if (d.kind == kind) out.push_back(&d);
  return out;
}

std::vector<const Entry*> Module::find_entries(std::string_view name) const {
  std::vector<const Entry*> out;
  for (const Entry& e : entries_)
    if (e.name == name) out.push_back(&e);
  return out;
}

std::string Module::toolchain_release() const {
  // NVRTC's banner is the leading comment of the first declaration.
  if (decls_.empty()) return {};
  llvm::StringRef banner = decls_.front().leading;
  const size_t at = banner.find("Cuda compilation tools, release ");
  if (at == llvm::StringRef::npos) return {};
  llvm::StringRef rest = banner.drop_front(at + 32);
  size_t n = 0;
  while (n < rest.size() && (llvm::isDigit(rest[n]) || rest[n] == '.')) ++n;
  return rest.take_front(n).str();
}

std::string_view Module::buffer_name() const {
  const llvm::StringRef id = sources_->getMemoryBuffer(sources_->getMainFileID())->getBufferIdentifier();
  return {id.data(), id.size()};
}

llvm::SMLoc Module::start() const {
  return llvm::SMLoc::getFromPointer(buffer_.data());
}

std::string Module::location(llvm::SMLoc loc) const {
  if (!loc.isValid()) return std::string(buffer_name());
  auto [line, col] = sources_->getLineAndColumn(loc);
  return fmt::format("{}:{}:{}", buffer_name(), line, col);
}

std::string Module::diagnostic(llvm::SMLoc loc, llvm::SourceMgr::DiagKind kind, const std::string& message) const {
  const llvm::SMDiagnostic full = sources_->GetMessage(loc, kind, message);
  // The source line is shown as at most a window around the column, with
  // control bytes as '?': PTX from elsewhere may put a whole module on one
  // line, and an error quotes an excerpt of its input, never all of it.
  constexpr size_t k_half_window = 80;
  const llvm::StringRef line = full.getLineContents();
  const auto col = static_cast<size_t>(std::max(full.getColumnNo(), 0));
  const size_t start = line.size() > 2 * k_half_window && col > k_half_window ? col - k_half_window : 0;
  const size_t end = std::min(line.size(), start + 2 * k_half_window);
  std::string shown = (start ? "..." : "") + line.slice(start, end).str() + (end < line.size() ? "..." : "");
  for (char& c : shown)
    if ((static_cast<unsigned char>(c) < 0x20 && c != '\t') || c == 0x7f) c = '?';
  const int shown_col = static_cast<int>(col - start + (start ? 3 : 0));
  const llvm::SMDiagnostic excerpt(*full.getSourceMgr(), full.getLoc(), full.getFilename(), full.getLineNo(), shown_col,
                                   full.getKind(), full.getMessage(), shown, {}, {});
  std::string out;
  llvm::raw_string_ostream os(out);
  excerpt.print(nullptr, os, /*ShowColors=*/false);
  os.flush();
  // The caret points into the window; the location keeps the real column.
  const std::string shown_at = fmt::format("{}:{}:{}:", full.getFilename().str(), full.getLineNo(), shown_col + 1);
  if (start && out.rfind(shown_at, 0) == 0)
    out.replace(0, shown_at.size(), fmt::format("{}:{}:{}:", full.getFilename().str(), full.getLineNo(), col + 1));
  return out;
}

llvm::StringRef Module::save(std::string text) {
  written_.push_back(std::move(text));
  return written_.back();
}

Statement& Module::insert_statement_after(Entry& entry, std::size_t index, std::string text) {
  const Statement& anchor = entry.body.at(index);
  Statement s;
  std::string leading(1, '\n');
  const llvm::StringRef indent = indentation(anchor.leading);
  leading.append(indent.data(), indent.size());
  s.leading = save(std::move(leading));
  s.text = save(std::move(text));
  s.loc = anchor.loc;
  s.kind = StatementKind::instruction;
  s.written = true;
  return *entry.body.insert(entry.body.begin() + static_cast<std::ptrdiff_t>(index) + 1, std::move(s));
}

PerfDirective& Module::append_directive(Entry& entry, std::string text, std::string name,
                                        std::vector<std::int64_t> values) {
  PerfDirective d;
  d.leading = save("\n");
  d.text = save(std::move(text));
  d.loc = entry.directives.empty() ? entry.loc : entry.directives.back().loc;
  d.written = true;
  d.name = std::move(name);
  d.values = std::move(values);
  entry.directives.push_back(std::move(d));
  return entry.directives.back();
}

}  // namespace moejit::ptx
