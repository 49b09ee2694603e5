#pragma once
// `validate`: check the PTX still is the kernel the codegen declared, before
// it is assembled. It changes nothing.
//
// - The entry's formals match the kernel ABI: their count, and each one's
//   name, type, alignment and array size (after tensormap-by-value).
// - Every instruction the target must have is still there (e.g. the
//   block-scaled `mma.sync.aligned.kind::mxf8f6f4` on sm_120a, and
//   `cp.async.bulk.tensor` where TMA is declared). An instruction matches a
//   pattern when its opcode begins with the pattern, modifier by modifier:
//   `cp.async.bulk.tensor` matches `cp.async.bulk.tensor.2d.shared::cluster...`
//   but not `cp.async.bulk.prefetch.tensor...`.
//
// This is what keeps hand-written inline assembly honest across compiler
// upgrades (paper §5.1): a changed launch ABI or a dropped MMA fails the build
// with a message naming the lost feature, instead of a slow or wrong kernel.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ptx_passes/pass.hpp"

namespace moejit::ptx {

struct ExpectedFormal {
  std::string name;              // empty: any name
  std::string type;              // ".u64", ".u32", ".f32", ".b8"; empty: any
  unsigned align = 0;            // the formal's own .align (0: none)
  std::uint64_t array_size = 0;  // 0: a scalar
  std::string role;              // what it is, for messages: "payload (ptr)"
};

struct EntryAbi {
  std::string entry;                                   // empty: the module's only entry
  std::optional<std::vector<ExpectedFormal>> formals;  // nullopt: formals not checked
  std::vector<std::string> required_instructions;
  std::string target;  // named in messages, e.g. "sm_120a"
};

class ValidatePass : public Pass {
 public:
  explicit ValidatePass(std::vector<EntryAbi> abis) : abis_(std::move(abis)) {}
  std::string_view name() const override { return "validate"; }
  Precondition precondition(const Module& m) const override;
  std::vector<Change> run(Module& m) const override;

 private:
  std::vector<Change> check(Module& m, const EntryAbi& abi) const;
  std::vector<EntryAbi> abis_;
};

// Whether `opcode` begins with `pattern`, modifier by modifier.
bool opcode_matches(llvm::StringRef opcode, llvm::StringRef pattern);

}  // namespace moejit::ptx
