#pragma once
// The sm_120a MMA atom (seed §4.3): the native block-scaled
//   mma.sync.aligned.kind::mxf8f6f4.block_scale.scale_vec::1X.m16n8k32
// with E2M1 weights in A and E4M3 activations in B. The packed scale words of
// both operands go in as they are, and the byte-id immediate picks the K32
// block, so the K loop does no scale shifting.
//
// Weight fragment order (the sm_120a layout of the weight transform): segment
// t, word j holds K32 block j as nibbles 0..3 = k 32j + 4t + {0..3} and nibbles
// 4..7 = k 32j + 16 + 4t + {0..3}: the A registers of rows g (a0, a2) or g+8
// (a1, a3) once each nibble is moved into its byte at bits 5..2.
//
// Token rows are staged as E4M3 bytes; their scale words (staged per column
// with the stage) go in as they are. The handoff is the fp8 one of the
// contract: E4M3 act rows and UE8M0 scale words.
//
// Compiled, assembled and validated here; it has not run (no sm_120 GPU in
// this project's reach). Its numerics, in particular which lanes supply the
// scale-factor words (thread-id immediate 0), must be checked on hardware.

#include "moe_pipeline.cuh"

namespace moejit {

// d += A(16x32 e2m1) * B(32x8 e4m3), block scales byte kByteId of sfa / sfb.
template <int kByteId>
__device__ __forceinline__ void mma_mxf8f6f4(float* d, const u32 (&a)[4], u32 b0, u32 b1, u32 sfa, u32 sfb) {
  asm volatile(
      "mma.sync.aligned.kind::mxf8f6f4.block_scale.scale_vec::1X.m16n8k32.row.col.f32.e2m1.e4m3.f32.ue8m0 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3}, {%10}, {%12, %13}, {%11}, {%12, %13};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1), "r"(sfa), "r"(sfb), "n"(kByteId), "n"(0));
}

__device__ __forceinline__ void ldmatrix_x2(u32 (&r)[2], const void* row_addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];"
               : "=r"(r[0]), "=r"(r[1])
               : "r"(smem_addr(row_addr)));
}

// Nibbles 0..3 / 4..7 of a fragment word into the 8-bit containers (bits 5..2).
__device__ __forceinline__ void expand_e2m1_word(u32 q, u32& low, u32& high) {
  const u32 even = q & 0x0F0F0F0Fu, odd = (q >> 4) & 0x0F0F0F0Fu;
  u32 l, h;
  asm("prmt.b32 %0, %1, %2, 0x5140;" : "=r"(l) : "r"(even), "r"(odd));
  asm("prmt.b32 %0, %1, %2, 0x7362;" : "=r"(h) : "r"(even), "r"(odd));
  low = l << 2;
  high = h << 2;
}

struct AtomSm120 {
  static constexpr int kPath = contract::kPathSm120;
  static constexpr float kAccScale = 1.0f;
  static constexpr bool kBf16Handoff = false;      // the GEMM1 handoff is MXFP8 (the w4a8-mx recipe)
  static constexpr bool kTokenFrame = false;       // GEMM1's rows in MX blocks (AtomSm90Fp8's kFrame)
  static constexpr bool kF32ScaleRecords = false;  // its MMA takes the UE8M0 bytes
  static constexpr int kStepCost[2][4] = {{1, 1, 1, 1}, {1, 1, 1, 1}};  // steps count alike (moe_schedule.cuh)

  static constexpr int kXRowPitch = 128 + 16;  // E4M3 bytes per K128, padded: conflict-free ldmatrix
  __device__ static u32 x_chunk_offset(int n, int c) { return u32(n * kXRowPitch + c * 16); }

  template <int N, int T, class Ring, class Cursor>
  __device__ static void mainloop(float (&acc_t)[T][N / 2], const Ring& ring, Cursor& cur, int steps) {
    static_assert(T == 1, "the sm_120a atom runs one 64-row tile per warpgroup");
    float(&acc)[N / 2] = acc_t[0];
    const int group = threadIdx.x / 128, warp = (threadIdx.x / 32) % contract::kConsumerWarps, lane = threadIdx.x % 32;
    const int g = lane / 4, t = lane % 4;
    const int row_lo = 16 * warp + g;
    for (int s = 0; s < steps; ++s) {
      const int st = cur.stage;
      wait_full(ring, st, cur.phase);
      cur.advance();
      const u8* w = ring.w_step(st, group);
      const uint4 w_lo = *reinterpret_cast<const uint4*>(w + row_lo * 64 + t * 16);
      const uint4 w_hi = *reinterpret_cast<const uint4*>(w + (row_lo + 8) * 64 + t * 16);
      // The scale word of each token column this lane feeds to B (column g of each group).
      u32 sfb[N / 8];
#pragma unroll
      for (int ng = 0; ng < N / 8; ++ng) sfb[ng] = ring.x_scale(st, 8 * ng + g);
      const u32 s_lo = ring.w_scales(st, group)[row_lo];
      const u8* x_tile = ring.x_tile(st);
      k32_step<0, N / 8>(acc, w_lo.x, w_hi.x, s_lo, x_tile, sfb, lane);
      k32_step<1, N / 8>(acc, w_lo.y, w_hi.y, s_lo, x_tile, sfb, lane);
      k32_step<2, N / 8>(acc, w_lo.z, w_hi.z, s_lo, x_tile, sfb, lane);
      k32_step<3, N / 8>(acc, w_lo.w, w_hi.w, s_lo, x_tile, sfb, lane);
      release_stage(ring, st);
    }
  }

 private:
  template <int kJ, int kGroups>
  __device__ __forceinline__ static void k32_step(float (&acc)[4 * kGroups], u32 w_lo, u32 w_hi, u32 s_lo,
                                                  const u8* x_tile, const u32 (&sfb)[kGroups], int lane) {
    u32 a[4];
    expand_e2m1_word(w_lo, a[0], a[2]);
    expand_e2m1_word(w_hi, a[1], a[3]);
#pragma unroll
    for (int ng = 0; ng < kGroups; ++ng) {
      u32 b[2];
      ldmatrix_x2(b, x_tile + (ng * 8 + (lane & 7)) * kXRowPitch + 32 * kJ + 16 * ((lane >> 3) & 1));
      mma_mxf8f6f4<kJ>(acc + 4 * ng, a, b[0], b[1], s_lo, sfb[ng]);
    }
  }
};

}  // namespace moejit
