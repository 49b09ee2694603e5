#pragma once
// A PTX pass: a name, a precondition and a change. Every rewrite states how
// many times it must match (exactly once unless stated) and throws PassError
// otherwise, naming the pass, the expected and found counts and the location
// of every match. A pass that matched a different number of times than its
// author saw would silently rewrite the wrong thing after a compiler upgrade;
// failing loudly is the point.

#include <llvm/Support/SMLoc.h>

#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "ptx_passes/ptx_module.hpp"

namespace moejit::ptx {

class PassError : public std::runtime_error {
 public:
  // `message` is the full text; the other fields let callers and tests act on
  // it. `expected`/`found` are -1 for failures that are not match counts.
  PassError(std::string pass, std::string message, long expected = -1, long found = -1,
            std::vector<std::string> locations = {});

  const std::string& pass() const { return pass_; }
  long expected() const { return expected_; }
  long found() const { return found_; }
  // "file:line:col" of every match (or of the scope searched when none matched).
  const std::vector<std::string>& locations() const { return locations_; }

 private:
  std::string pass_;
  long expected_, found_;
  std::vector<std::string> locations_;
};

// Whether a pass applies to a module. When it does not, the pass leaves the
// module untouched and `reason` says why (shown by `moejit inspect`).
struct Precondition {
  bool holds = true;
  std::string reason;

  static Precondition yes() { return {}; }
  static Precondition no(std::string why) { return {false, std::move(why)}; }
};

// One thing a pass did (or, for a checking pass, verified), and where.
struct Change {
  llvm::SMLoc loc;
  std::string what;
};

class Pass {
 public:
  virtual ~Pass() = default;
  virtual std::string_view name() const = 0;
  virtual Precondition precondition(const Module& m) const = 0;
  // Rewrites or checks `m`. Throws PassError when a match count is wrong.
  virtual std::vector<Change> run(Module& m) const = 0;
};

// Throws PassError unless `sites` holds exactly `expected` locations:
//   pass 'P': <what>: expected N, found M
//   file:line:col: note: match 1 of M
//   <source line and caret>
// With no match the note points at `scope`, the place that was searched.
void expect_count(const Module& m, std::string_view pass, const std::string& what, std::size_t expected,
                  const std::vector<llvm::SMLoc>& sites, llvm::SMLoc scope);

// A PassError that is not a count mismatch, with a note at `loc`.
[[noreturn]] void fail_at(const Module& m, std::string_view pass, const std::string& message, llvm::SMLoc loc);

// The single entry called `entry` (or, with an empty name, the module's only
// entry); anything but exactly one is a PassError of `pass`.
Entry& single_entry(Module& m, std::string_view pass, const std::string& entry);

}  // namespace moejit::ptx
