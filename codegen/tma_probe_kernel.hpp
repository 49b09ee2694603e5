#pragma once
// The TMA probe (templates/tma_probe.cuh): three TensorMap formals, each read
// by a descriptor prefetch and one 2D bulk tensor copy. It is the real
// compiler output the tensormap-by-value pass is tested on; sm_90a and later.

#include "codegen/kernel_spec.hpp"

namespace moejit::codegen {

inline constexpr int k_tma_probe_box_cols = 64;  // bytes per box row
inline constexpr int k_tma_probe_box_rows = 16;
inline constexpr int k_tma_probe_map_uses = 2;  // prefetch.tensormap + cp.async.bulk.tensor

// ABI: (tensormap map_a, tensormap map_b, tensormap map_c, u8* out [3*16*64], u32 tile_x, u32 tile_y)
KernelSpec tma_probe_spec(Target target);

}  // namespace moejit::codegen
