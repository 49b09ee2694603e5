#pragma once
// Role 3, finalize: y[t] = BF16(sum over j of the k BF16 route rows, in FP32,
// in slot order j = 0..k-1). A token with a poisoned route becomes NaN.

#include "moe_ptx.cuh"
#include "moe_workspace.cuh"

namespace moejit {

template <int kHidden, int kTopK>
__device__ void moe_finalize(u16* __restrict__ y, u32 tokens, const MoeWorkspace& ws) {
  const u32 chunks = tokens * (kHidden / 8);
  for (u32 c = blockIdx.x * blockDim.x + threadIdx.x; c < chunks; c += gridDim.x * blockDim.x) {
    const u32 token = c / (kHidden / 8), h = (c % (kHidden / 8)) * 8;
    float sum[8] = {0, 0, 0, 0, 0, 0, 0, 0};
#pragma unroll
    for (int j = 0; j < kTopK; ++j) {
      const uint4 v = *reinterpret_cast<const uint4*>(ws.arena + (u64(token) * kTopK + j) * kHidden + h);
      const u32 words[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        sum[2 * i] += bf16_to_float(words[i] & 0xFFFFu);
        sum[2 * i + 1] += bf16_to_float(words[i] >> 16);
      }
    }
    const bool poison = ws.token_poison[token] != 0;
    u32 out[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const u32 lo = poison ? 0x7FC0u : float_to_bf16_rne(sum[2 * i]);
      const u32 hi = poison ? 0x7FC0u : float_to_bf16_rne(sum[2 * i + 1]);
      out[i] = lo | (hi << 16);
    }
    *reinterpret_cast<uint4*>(y + u64(token) * kHidden + h) = make_uint4(out[0], out[1], out[2], out[3]);
  }
}

template <int kHidden, int kTopK>
__device__ void moe_finalize_entry(u16* y, u32 tokens, MOEJIT_WORKSPACE_FORMALS) {
  griddep_wait();  // the arena rows are the compute role's
  moe_finalize<kHidden, kTopK>(y, tokens, MOEJIT_WORKSPACE_STRUCT);
}

}  // namespace moejit
