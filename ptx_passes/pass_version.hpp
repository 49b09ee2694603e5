#pragma once
// `version`: rewrite the module's `.version` under a policy, and only then.
//
// The PTX ISA version is a promise about the instructions a module may use;
// ptxas checks every instruction against the target anyway. So lowering the
// header is safe exactly when someone has checked that the instruction
// stream is legal under the lower version, which is what a policy records:
// the cap a consumer accepts (an older assembler or driver JIT), optionally
// limited to the toolchain release the cap was validated with (paper §5.1:
// rewrite 9.4 -> 9.2 only when the recorded toolchain is 13.2, so a newer
// toolchain is left untouched).

#include <optional>
#include <string>

#include "ptx_passes/pass.hpp"
#include "ptx_passes/ptx_isa.hpp"

namespace moejit::ptx {

struct VersionPolicy {
  // Lower `.version` to this when the module's is newer. nullopt: no policy.
  std::optional<PtxVersion> cap;
  // Apply only to modules from this toolchain release ("13.2", as NVRTC's
  // banner says); empty: any module.
  std::string only_for_release;
};

class VersionPass : public Pass {
 public:
  explicit VersionPass(VersionPolicy policy) : policy_(std::move(policy)) {}
  std::string_view name() const override { return "version"; }
  Precondition precondition(const Module& m) const override;
  std::vector<Change> run(Module& m) const override;

 private:
  VersionPolicy policy_;
};

}  // namespace moejit::ptx
