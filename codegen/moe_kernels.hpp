#pragma once
// KernelSpecs of the MoE operator's kernels: the three roles (dispatch,
// compute, finalize) and the weight transform. Each builder takes only the
// values that change the emitted code; everything else is a launch argument.

#include "codegen/kernel_spec.hpp"

namespace moejit::codegen {

// What the MoE role kernels are specialized on.
struct MoeKernelShape {
  int experts = 0;  // E (local experts; all of them on one GPU)
  int top_k = 0;
  int hidden = 0;        // H
  int intermediate = 0;  // I
  int tile_n = 16;       // token columns per compute item
  int stages = 4;        // compute pipeline depth (K128 steps in flight)
  int min_blocks_per_sm = 1;
  int max_registers = 0;  // 0: no cap
  bool input_bf16 = false;

  friend bool operator==(const MoeKernelShape&, const MoeKernelShape&) = default;
};

inline constexpr int k_dispatch_threads = 1024;
inline constexpr int k_compute_threads = 160;  // 4 math warps + 1 producer warp
inline constexpr int k_finalize_threads = 256;
inline constexpr int k_transform_threads = 256;
// Per-stage SMEM of the sm_90a compute role: weight tile, scale words, BF16 token rows (padded).
inline constexpr int k_weight_stage_bytes = 64 * 64 + 256;
inline constexpr int k_x_row_bytes = 256 + 16;

// Dynamic SMEM of the compute role for `shape` (the layout of templates/moe_compute.cuh;
// sm_120a stages E4M3 token rows, sm_90a their BF16 image).
int compute_smem_bytes(const MoeKernelShape& shape, Target target = Target{Arch::sm_90a});

KernelSpec moe_dispatch_spec(const MoeKernelShape& shape, Target target);
KernelSpec moe_compute_spec(const MoeKernelShape& shape, Target target);
KernelSpec moe_finalize_spec(const MoeKernelShape& shape, Target target);
// rows = N of the projection (2I for W1, interleaved; H for W2), k = its K.
KernelSpec moe_weight_transform_spec(int experts, int rows, int k, bool interleave, Target target);

}  // namespace moejit::codegen
