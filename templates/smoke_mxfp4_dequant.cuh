#pragma once
// Smoke kernel: dequantize MXFP4 blocks (32 E2M1 nibbles, low nibble first, plus
// one UE8M0 scale) to BF16. Small and real: it exercises the whole JIT pipeline
// and the exact decode the MoE kernels' sm_90a path relies on.

#include "mx_types.cuh"

namespace moejit {

// One thread per 32-element block: a 16-byte payload load, 64 bytes of BF16 out.
template <int kThreads>
__device__ __forceinline__ void smoke_mxfp4_dequant(const u8* __restrict__ payload, const u8* __restrict__ scales,
                                                    u16* __restrict__ out, u32 n_blocks) {
  for (u32 block = blockIdx.x * kThreads + threadIdx.x; block < n_blocks; block += gridDim.x * kThreads) {
    const uint4 packed = *reinterpret_cast<const uint4*>(payload + 16ull * block);
    const float scale = ue8m0_to_float(scales[block]);
    const u32 words[4] = {packed.x, packed.y, packed.z, packed.w};
    uint4* dst = reinterpret_cast<uint4*>(out + 32ull * block);
#pragma unroll
    for (int w = 0; w < 4; ++w) {
      u32 bf16x2[4];
#pragma unroll
      for (int b = 0; b < 4; ++b) {
        const u32 byte = (words[w] >> (8 * b)) & 0xFFu;
        const u16 lo = float_to_bf16_rne(e2m1_to_float(byte & 0xFu) * scale);
        const u16 hi = float_to_bf16_rne(e2m1_to_float(byte >> 4) * scale);
        bf16x2[b] = u32(lo) | (u32(hi) << 16);
      }
      dst[w] = make_uint4(bf16x2[0], bf16x2[1], bf16x2[2], bf16x2[3]);
    }
  }
}

}  // namespace moejit
