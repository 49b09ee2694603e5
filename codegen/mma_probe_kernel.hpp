#pragma once
// The sm_120a MMA probe (templates/mma_probe.cuh): one warp issuing the
// block-scaled mma.sync.aligned.kind::mxf8f6f4 with packed scale words and
// byte-id immediates. The validate pass must find the instruction in it.

#include "codegen/kernel_spec.hpp"

namespace moejit::codegen {

inline constexpr int k_mma_probe_blocks = 2;  // K=128 blocks per warp
inline constexpr const char* k_block_scaled_mma = "mma.sync.aligned.kind::mxf8f6f4.block_scale";

// Only sm_120a has the instruction; the template refuses other targets.
bool mma_probe_supports(Target target);

// ABI: (const u32* a, const u32* b, const u32* sfa, const u32* sfb, f32* d)
KernelSpec mma_probe_spec(Target target);

}  // namespace moejit::codegen
