#pragma once
// The sm_90a MMA atom: MXFP4 weights are expanded to BF16 in registers with
// their UE8M0 scale folded in (E2M1 * 2^s is exact in BF16), activations
// arrive as BF16, and mma.sync m16n8k16 accumulates in FP32. Exact products,
// so no per-K32 fix-up. (FP8 mma.sync exists on sm_90a but is emulated.)
//
// Weight fragment order (written by the weight transform): for each 64-row x
// K128 tile, row n holds 64 bytes = four 16-byte segments, one per lane
// column t = lane % 4. Segment word j covers K32 block j as four element pairs,
// exactly the A-fragment pairs of the two m16n8k16 issues of block j:
//   pair 0: k = 32j + 2t + {0,1}        pair 1: k = 32j + 2t + 8 + {0,1}
//   pair 2: k = 32j + 16 + 2t + {0,1}   pair 3: k = 32j + 24 + 2t + {0,1}
// The bits of each E2M1 code (m, e0, e1, s) are scattered so that a pair is
// one AND (pair 0), a rotate and an AND (pairs 1, 2) or two of each (pair 3)
// away from a BF16x2 with sign at 15/31 and e1 e0 m at 8..6 / 24..22:
//   pair 0  lo m,e0,e1,s -> bits  6, 7, 8,15   hi ->  22,23,24,31
//   pair 1  lo           -> bits 10,11,12,19   hi ->  26,27,28, 3   (rotate right 4)
//   pair 2  lo           -> bits 16,17,18,25   hi ->   0, 1, 2, 9   (rotate right 10)
//   pair 3  lo           -> bits 20,13,14,21   hi ->   4,29,30, 5   (m: rotate 14, rest: rotate 6)
// That is 9 integer operations per 8 weights instead of ~16 for nibble
// shifting: the dequantization, not HBM, bounds this kernel.

#include "moe_ptx.cuh"
#include "moe_workspace.cuh"

namespace moejit {

__device__ __forceinline__ u32 rotr(u32 x, int n) {
  u32 r;
  asm("shf.r.wrap.b32 %0, %1, %1, %2;" : "=r"(r) : "r"(x), "r"(n));
  return r;
}

// BF16x2 multipliers 2^(s-1) for the four UE8M0 codes s <= 128 of a scale
// word: they turn the raw E2M1 * 2^-126 pattern below into E2M1 * 2^(s-127).
// Bytes s + 126 never carry, so one add serves all four blocks.
__device__ __forceinline__ u32 scale_exponents(u32 scale_word) {
  return scale_word + 0x7E7E7E7Eu;
}
__device__ __forceinline__ u32 e2m1_scale_multiplier(u32 exponents, int j) {
  u32 dup;  // bytes {E_j, 0, E_j, 0}
  asm("prmt.b32 %0, %1, 0, %2;" : "=r"(dup) : "r"(exponents), "r"(0x4040u | (j << 8) | j));
  return dup << 7;
}

// The four BF16x2 pairs of one fragment word, scaled. The placed bits read as
// E2M1 * 2^-126 (code 1, the 0.5 subnormal, lands on the BF16 subnormal 2^-127).
__device__ __forceinline__ void dequant_e2m1_word(u32 q, u32 multiplier, u32 (&pairs)[4]) {
  constexpr u32 kPair = 0x81C081C0u;
  pairs[0] = bf16x2_mul(q & kPair, multiplier);
  pairs[1] = bf16x2_mul(rotr(q, 4) & kPair, multiplier);
  pairs[2] = bf16x2_mul(rotr(q, 10) & kPair, multiplier);
  pairs[3] = bf16x2_mul((rotr(q, 6) & 0x81808180u) | (rotr(q, 14) & 0x00400040u), multiplier);
}

struct AtomSm90 {
  // Token rows are staged as the BF16 image of their MXFP8 values: 256 bytes
  // per K128, padded to 272 so ldmatrix rows fall on distinct banks.
  static constexpr int kXChunkBytes = 256;
  static constexpr int kXRowBytes = 256 + 16;

  template <int kHidden>
  __device__ static const u8* gemm1_row(const MoeWorkspace& ws, int token) {
    return reinterpret_cast<const u8*>(ws.x_bf16 + u64(token) * kHidden);
  }
  template <int kInter>
  __device__ static const u8* gemm2_row(const MoeWorkspace& ws, int pos) {
    return reinterpret_cast<const u8*>(ws.handoff + u64(pos) * kInter);
  }
  // Nothing per token column: the activation scales are folded into the BF16 rows.
  template <int kGroups>
  struct Columns {};
  template <int kHidden, int kInter, int kTopK, int kGroups>
  __device__ static void load_columns(Columns<kGroups>&, const MoeWorkspace&, int, int, bool) {}
  // The L1 handoff holds the BF16 image of the requantized MXFP8 act.
  template <int kInter>
  __device__ static void store_handoff(const MoeWorkspace& ws, int pos, int i, u32 q, u32 code, bool) {
    ws.handoff[u64(pos) * kInter + i] = mxfp8_to_bf16(q, code);
  }

  // One K128 step of a warp's m16 slice against `groups` token groups of 8.
  // w_lo / w_hi: the lane's 16-byte segments of rows g and g+8; s_lo / s_hi their scale words.
  template <int kGroups>
  __device__ __forceinline__ static void k128_step(float (&acc)[kGroups][4], uint4 w_lo, uint4 w_hi, u32 s_lo, u32 s_hi,
                                                   const u8* x_tile, int groups, const Columns<kGroups>&, int) {
    constexpr int x_row_bytes = kXRowBytes;
    const int lane = threadIdx.x & 31;
    const u32 lo[4] = {w_lo.x, w_lo.y, w_lo.z, w_lo.w};
    const u32 hi[4] = {w_hi.x, w_hi.y, w_hi.z, w_hi.w};
    const u32 exp_lo = scale_exponents(s_lo), exp_hi = scale_exponents(s_hi);
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      u32 pa[4], pb[4];
      dequant_e2m1_word(lo[j], e2m1_scale_multiplier(exp_lo, j), pa);
      dequant_e2m1_word(hi[j], e2m1_scale_multiplier(exp_hi, j), pb);
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
