#pragma once
// The sm_90a MMA atom: MXFP4 weights are expanded to BF16 in registers with
// their UE8M0 scale folded in (E2M1 * 2^s is exact in BF16), activations
// arrive as BF16, and mma.sync m16n8k16 accumulates in FP32. Exact products,
// so no per-K32 fix-up. (FP8 mma.sync exists on sm_90a but is emulated.)
//
// Weight fragment order (written by the weight transform): for each 64-row x
// K128 tile, row n holds 64 bytes = four 16-byte segments, one per lane
// column t = lane % 4. Segment word j covers K chunks 2j and 2j+1 (16 wide),
// i.e. K32 block j. Its nibble 3-i / 7-i are the low / high element of pair i:
//   pair 0: k = 32j + 2t + {0,1}        pair 1: k = 32j + 2t + 8 + {0,1}
//   pair 2: k = 32j + 16 + 2t + {0,1}   pair 3: k = 32j + 24 + 2t + {0,1}
// which are exactly the A-fragment pairs of the two m16n8k16 issues of block j.

#include "moe_ptx.cuh"

namespace moejit {

// BF16x2 multiplier 2^(s-1) for UE8M0 code s <= 128: it turns the raw
// E2M1 * 2^-126 bit pattern below into E2M1 * 2^(s-127).
__device__ __forceinline__ u32 e2m1_scale_multiplier(u32 code) { return ((code + 126u) << 7) * 0x00010001u; }

// Four BF16x2 pairs from one fragment word: placing the nibble's sign at bit
// 15 and its exponent/mantissa bits at 8..6 gives E2M1 * 2^-126 (code 1, the
// 0.5 subnormal, lands on the BF16 subnormal 2^-127), then one multiply.
__device__ __forceinline__ void dequant_e2m1_word(u32 q, u32 multiplier, u32 (&pairs)[4]) {
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const u32 shifted = q << (4 * i);
    pairs[i] = bf16x2_mul((shifted & 0x80008000u) | ((shifted & 0x70007000u) >> 6), multiplier);
  }
}

struct AtomSm90 {
  static constexpr int kKPerIssue = 16;
  static constexpr int kXBytesPerElement = 2;  // activations staged as BF16

  // One K128 step of a warp's m16 slice against `groups` token groups of 8.
  // w_lo / w_hi: the lane's 16-byte segments of rows g and g+8; s_lo / s_hi their scale words.
  template <int kGroups>
  __device__ __forceinline__ static void k128_step(float (&acc)[kGroups][4], uint4 w_lo, uint4 w_hi, u32 s_lo,
                                                    u32 s_hi, const u8* x_tile, int x_row_bytes, int groups) {
    const int lane = threadIdx.x & 31;
    const u32 lo[4] = {w_lo.x, w_lo.y, w_lo.z, w_lo.w};
    const u32 hi[4] = {w_hi.x, w_hi.y, w_hi.z, w_hi.w};
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      u32 pa[4], pb[4];
      dequant_e2m1_word(lo[j], e2m1_scale_multiplier((s_lo >> (8 * j)) & 0xFFu), pa);
      dequant_e2m1_word(hi[j], e2m1_scale_multiplier((s_hi >> (8 * j)) & 0xFFu), pb);
      const u32 a0[4] = {pa[0], pb[0], pa[1], pb[1]};
      const u32 a1[4] = {pa[2], pb[2], pa[3], pb[3]};
#pragma unroll
      for (int ng = 0; ng < kGroups; ++ng) {
        if (ng >= groups) break;
        u32 b[4];
        ldmatrix_x4(b, x_tile + (ng * 8 + (lane & 7)) * x_row_bytes + (32 * j + 8 * (lane >> 3)) * 2);
        mma_bf16_m16n8k16(acc[ng], a0, b[0], b[1]);
        mma_bf16_m16n8k16(acc[ng], a1, b[2], b[3]);
      }
    }
  }
};

}  // namespace moejit
