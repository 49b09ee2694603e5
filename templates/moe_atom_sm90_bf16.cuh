#pragma once
// The exact sm_90a MMA atom: MXFP4 weights are expanded to BF16 in registers with
// their UE8M0 scale folded in (E2M1 * 2^s is exact in BF16), activations
// arrive as BF16, and mma.sync m16n8k16 accumulates in FP32. Exact products,
// so no per-K32 fix-up. (FP8 mma.sync exists on sm_90a but is emulated.)
//
// Weight fragment order (moe_weight_layouts.cuh, kLayoutSm90Bf16): in each
// step blob's 64-row x K128 payload, row n holds 64 bytes = four 16-byte segments, one per lane
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

#include "moe_pipeline.cuh"

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

struct AtomSm90Bf16 {
  static constexpr int kPath = contract::kPathSm90Bf16;
  static constexpr float kAccScale = 1.0f;
  // The GEMM1 handoff: the BF16 image of the MXFP8-requantized activation (the
  // w4a8-mx recipe), or, with kBf16Handoff, the activation rounded to BF16.
  static constexpr bool kBf16Handoff = false;
  static constexpr bool kTokenFrame = false;  // GEMM1's rows in MX blocks (AtomSm90Fp8's kFrame)
  static constexpr bool kF32ScaleRecords = false;
  // A K128 step's cost by token tile class (moe_schedule.cuh): not measured
  // per N for this atom yet, so its steps count alike.
  static constexpr int kStepCost[2][4] = {{1, 1, 1, 1}, {1, 1, 1, 1}};

  // Token rows are staged as the BF16 image of their MXFP8 values: 256 bytes
  // per K128 in 272-byte rows, so ldmatrix rows fall on distinct banks.
  static constexpr int kXRowPitch = 256 + 16;
  __device__ static u32 x_chunk_offset(int n, int c) { return u32(n * kXRowPitch + c * 16); }

  // One 64-row tile per warpgroup (T = 1). Every shared address is this
  // thread's fixed offset plus the stage's base, so the loop carries no
  // per-step index math (it was 30% of the loop's instructions).
  template <int N, int T, class Ring, class Cursor>
  __device__ static void mainloop(float (&acc_t)[T][N / 2], const Ring& ring, Cursor& cur, int steps) {
    static_assert(T == 1, "the exact atom runs one 64-row tile per warpgroup");
    float(&acc)[N / 2] = acc_t[0];
    const int group = threadIdx.x / 128, warp = (threadIdx.x / 32) % contract::kConsumerWarps, lane = threadIdx.x % 32;
    const int g = lane / 4, t = lane % 4;
    const int row_lo = 16 * warp + g;
    const u8* w0 = ring.w_step(0, group) + row_lo * 64 + t * 16;
    const u32* s0 = ring.w_scales(0, group) + row_lo;
    const u8* x0 = ring.x_tile(0) + (lane & 7) * kXRowPitch + 16 * (lane >> 3);
    for (int s = 0; s < steps; ++s) {
      const int st = cur.stage;
      wait_full(ring, st, cur.phase);
      cur.advance();
      const u8* w = w0 + st * Ring::kWBytes;
      const u32* ws = s0 + st * (Ring::kWBytes / 4);
      const uint4 w_lo = *reinterpret_cast<const uint4*>(w);
      const uint4 w_hi = *reinterpret_cast<const uint4*>(w + 8 * 64);
      k128_step<N / 8>(acc, w_lo, w_hi, ws[0], ws[8], x0 + st * Ring::kXStageBytes);
      release_stage(ring, st);
    }
  }

 private:
  // One K128 step of a warp's m16 slice against kGroups token groups of 8.
  // w_lo / w_hi: the lane's 16-byte segments of rows g and g+8; s_lo / s_hi
  // their scale words; x: this lane's ldmatrix row address in the stage.
  template <int kGroups>
  __device__ __forceinline__ static void k128_step(float (&acc)[4 * kGroups], uint4 w_lo, uint4 w_hi, u32 s_lo,
                                                   u32 s_hi, const u8* x) {
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
        u32 b[4];
        ldmatrix_x4(b, x + ng * 8 * kXRowPitch + 64 * j);
        mma_bf16_m16n8k16(acc + 4 * ng, a0, b[0], b[1]);
        mma_bf16_m16n8k16(acc + 4 * ng, a1, b[2], b[3]);
      }
    }
  }
};

// The W4A16 recipe on the same mainloop: the rows are the caller's BF16 x
// (no MXFP8 anywhere), and the GEMM1 handoff is the activation in BF16.
struct AtomSm90Bf16W4A16 : AtomSm90Bf16 {
  static constexpr bool kBf16Handoff = true;
  static constexpr bool kTokenFrame = false;  // GEMM1's rows in MX blocks (AtomSm90Fp8's kFrame)
  static constexpr bool kF32ScaleRecords = false;
};

}  // namespace moejit
