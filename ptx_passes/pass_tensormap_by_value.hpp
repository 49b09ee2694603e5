#pragma once
// `tensormap-by-value`: pass TensorMaps in the kernel's parameter space.
//
// A descriptor in global memory is fetched into the tensormap cache on first
// use: a miss inside the first pipeline stage that a replayed graph cannot
// hide (paper §5.1). So the host passes the 128-byte descriptor itself. The
// templates keep a uniform pointer ABI (a TensorMap is a `const void*`
// formal, which NVRTC declares `.param .u64` and loads once with
// `ld.param.u64 %rd, [name]`); this pass turns the formal into
// `.param .align 128 .b8 name[128]` and the load into the descriptor's
// generic address in the parameter space:
//
//     mov.b64        %rd, name;      // the formal's .param address
//     cvta.param.u64 %rd, %rd;       // generic, PTX >= 7.7
//
// so every TMA instruction that read %rd now reads the descriptor from the
// parameter space, with no other instruction changed.
//
// What NVRTC 13 emits (checked for compute_90a, 100a and 120a): a map that
// only reaches inline asm (an "l" operand) is loaded with one ld.param.u64
// and its register is used as is. A `cvta.to.global.u64` of that register
// means the kernel dereferences the descriptor as global memory, which a
// by-value map is not in: the pass rejects it rather than produce a kernel
// that reads the wrong space. It also asserts exactly one load per map and
// the stated number of reads of the loaded register (the paper's "used
// exactly twice": a stronger check than counting formals, which fails if a
// compiler ever reuses a descriptor for a second purpose).

#include <string>
#include <vector>

#include "ptx_passes/pass.hpp"

namespace moejit::ptx {

struct TensorMapFormal {
  std::string entry;   // empty: the module's only entry
  std::string formal;  // the PTX formal, e.g. "moejit_tma_probe_param_0"
  int uses = 1;        // instructions that must read the loaded register
};

class TensorMapByValuePass : public Pass {
 public:
  explicit TensorMapByValuePass(std::vector<TensorMapFormal> maps) : maps_(std::move(maps)) {}
  std::string_view name() const override { return "tensormap-by-value"; }
  Precondition precondition(const Module& m) const override;
  std::vector<Change> run(Module& m) const override;

 private:
  std::vector<Change> rewrite(Module& m, const TensorMapFormal& map) const;
  std::vector<TensorMapFormal> maps_;
};

}  // namespace moejit::ptx
