#pragma once
// The sm_120a MMA atom (seed §4.3): the native block-scaled
//   mma.sync.aligned.kind::mxf8f6f4.block_scale.scale_vec::1X.m16n8k32
// with E2M1 weights in A and E4M3 activations in B. The packed scale words of
// both operands go in as they are, and the byte-id immediate picks the K32
// block, so the K loop does no scale shifting. Token rows are staged as E4M3
// bytes; their scale words are read per column.
//
// Weight fragment order (the sm_120a layout of the weight transform): segment
// t, word j holds K32 block j as nibbles 0..3 = k 32j + 4t + {0..3} and nibbles
// 4..7 = k 32j + 16 + 4t + {0..3}: the A registers of rows g (a0, a2) or g+8
// (a1, a3) once each nibble is moved into its byte at bits 5..2.
//
// The L1 handoff row of a route is its E4M3 act (I bytes) followed by its
// UE8M0 codes (I/32 bytes, padded to 16): handoff_row_bytes<kInter>().
//
// Compiled, assembled and validated here; it has not run (no sm_120 GPU in
// this project's reach). Its numerics, in particular which lanes supply the
// scale-factor words (thread-id immediate 0), must be checked on hardware.

#include "moe_ptx.cuh"
#include "moe_workspace.cuh"

namespace moejit {

template <int kInter>
__device__ __forceinline__ constexpr int handoff_row_bytes() {
  return kInter + (kInter / 32 + 15) / 16 * 16;
}

// d += A(16x32 e2m1) * B(32x8 e4m3), block scales byte kByteId of sfa / sfb.
template <int kByteId>
__device__ __forceinline__ void mma_mxf8f6f4(float (&d)[4], const u32 (&a)[4], u32 b0, u32 b1, u32 sfa, u32 sfb) {
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
  static constexpr int kXChunkBytes = 128;     // E4M3 bytes per K128
  static constexpr int kXRowBytes = 128 + 16;  // padded: conflict-free ldmatrix

  template <int kHidden>
  __device__ static const u8* gemm1_row(const MoeWorkspace& ws, int token) {
    return ws.x_q + u64(token) * kHidden;
  }
  template <int kInter>
  __device__ static const u8* gemm2_row(const MoeWorkspace& ws, int pos) {
    return reinterpret_cast<const u8*>(ws.handoff) + u64(pos) * handoff_row_bytes<kInter>();
  }
  // The scale words (one per K128) of each token column this lane feeds to B.
  template <int kGroups>
  struct Columns {
    const u32* scales[kGroups];
  };
  template <int kHidden, int kInter, int kTopK, int kGroups>
  __device__ static void load_columns(Columns<kGroups>& c, const MoeWorkspace& ws, int base, int rows, bool gemm2) {
    const int g = (threadIdx.x & 31) / 4;
#pragma unroll
    for (int ng = 0; ng < kGroups; ++ng) {
      const int col = ng * 8 + g;
      c.scales[ng] = nullptr;
      if (col >= rows) continue;
      const int pos = base + col;
      c.scales[ng] = gemm2 ? reinterpret_cast<const u32*>(reinterpret_cast<const u8*>(ws.handoff) +
                                                          u64(pos) * handoff_row_bytes<kInter>() + kInter)
                           : ws.x_scales + u64(ws.route_slot[pos] / kTopK) * (kHidden / 128);
    }
  }
  template <int kInter>
  __device__ static void store_handoff(const MoeWorkspace& ws, int pos, int i, u32 q, u32 code, bool block_owner) {
    u8* row = reinterpret_cast<u8*>(ws.handoff) + u64(pos) * handoff_row_bytes<kInter>();
    row[i] = u8(q);
    if (block_owner) row[kInter + i / 32] = u8(code);
  }

  template <int kJ, int kGroups>
  __device__ __forceinline__ static void k32_step(float (&acc)[kGroups][4], u32 w_lo, u32 w_hi, u32 s_lo,
                                                  const u8* x_tile, int groups, const u32 (&sfb)[kGroups]) {
    const int lane = threadIdx.x & 31;
    u32 a[4];
    expand_e2m1_word(w_lo, a[0], a[2]);
    expand_e2m1_word(w_hi, a[1], a[3]);
#pragma unroll
    for (int ng = 0; ng < kGroups; ++ng) {
      if (ng >= groups) break;
      u32 b[2];
      ldmatrix_x2(b, x_tile + (ng * 8 + (lane & 7)) * kXRowBytes + 32 * kJ + 16 * ((lane >> 3) & 1));
      mma_mxf8f6f4<kJ>(acc[ng], a, b[0], b[1], s_lo, sfb[ng]);
    }
  }

  template <int kGroups>
  __device__ __forceinline__ static void k128_step(float (&acc)[kGroups][4], uint4 w_lo, uint4 w_hi, u32 s_lo,
                                                   u32 /*s_hi*/, const u8* x_tile, int groups,
                                                   const Columns<kGroups>& columns, int kb) {
    u32 sfb[kGroups];
#pragma unroll
    for (int ng = 0; ng < kGroups; ++ng) sfb[ng] = columns.scales[ng] ? columns.scales[ng][kb] : 0u;
    k32_step<0>(acc, w_lo.x, w_hi.x, s_lo, x_tile, groups, sfb);
    k32_step<1>(acc, w_lo.y, w_hi.y, s_lo, x_tile, groups, sfb);
    k32_step<2>(acc, w_lo.z, w_hi.z, s_lo, x_tile, groups, sfb);
    k32_step<3>(acc, w_lo.w, w_hi.w, s_lo, x_tile, groups, sfb);
  }
};

}  // namespace moejit
