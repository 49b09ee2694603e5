#pragma once
// The smoke kernel: MXFP4 -> BF16 dequantization (templates/smoke_mxfp4_dequant.cuh).
// Small enough to compile in milliseconds, real enough to check on a GPU
// element by element. It proves the whole pipeline: emit, NVRTC, passes,
// nvJitLink, cache, load and launch.

#include <cstdint>
#include <vector>

#include "codegen/kernel_spec.hpp"

namespace moejit::codegen {

inline constexpr int k_smoke_threads = 256;

// ABI: (const u8* payload [n_blocks*16], const u8* scales [n_blocks], u16* out [n_blocks*32], u32 n_blocks)
KernelSpec smoke_kernel_spec(Target target, int threads = k_smoke_threads);

// The CPU twin the GPU result is checked against: BF16 bits of every element.
std::vector<std::uint16_t> smoke_reference(const std::vector<std::uint8_t>& payload,
                                           const std::vector<std::uint8_t>& scales);

}  // namespace moejit::codegen
