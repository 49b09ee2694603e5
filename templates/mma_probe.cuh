#pragma once
// sm_120a probe: the native block-scaled MMA (paper §4.3, Listing 1),
// mma.sync.aligned.kind::mxf8f6f4.block_scale.scale_vec::1X.m16n8k32 with
// E2M1 A (weights), E4M3 B (activations) and UE8M0 scales. Per K=128 block a
// lane loads one packed scale word per operand and issues four MMAs that
// pick the K32 block's byte with the byte-id immediate, so the loop has no
// scale shifts. It exists so the validate pass has real compiler output that
// must keep the instruction; the MoE mainloop issues the same atom.
//
// The instruction exists only on sm_120a/sm_121a (PTX >= 8.7): for any other
// target this header refuses to compile rather than emit PTX that ptxas
// would reject later.

#include "mx_types.cuh"

#if !defined(__CUDA_ARCH_FEAT_SM120_ALL) && !defined(__CUDA_ARCH_FEAT_SM121_ALL)
#error "mma_probe.cuh: the block-scaled mma.sync needs compute_120a or compute_121a"
#endif

namespace moejit {

// d += A(16x32 e2m1) * B(32x8 e4m3), scaled by byte kByteId of sfa and sfb.
template <int kByteId>
__device__ __forceinline__ void mma_probe_qmma(float (&d)[4], const u32 (&a)[4], const u32 (&b)[2], u32 sfa, u32 sfb) {
  asm volatile(
      "mma.sync.aligned.kind::mxf8f6f4.block_scale.scale_vec::1X.m16n8k32.row.col.f32.e2m1.e4m3.f32.ue8m0 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3}, {%10}, {%12, %13}, {%11}, {%12, %13};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "r"(sfa), "r"(sfb), "n"(kByteId), "n"(0));
}

// One K32 step: this lane's fragments of step `step`, then the MMA.
template <int kByteId>
__device__ __forceinline__ void mma_probe_step(float (&acc)[4], const u32* __restrict__ a, const u32* __restrict__ b,
                                               u32 step, u32 lane, u32 sfa, u32 sfb) {
  const u32* ap = a + (step * 32 + lane) * 4;
  const u32* bp = b + (step * 32 + lane) * 2;
  const u32 af[4] = {ap[0], ap[1], ap[2], ap[3]};
  const u32 bf[2] = {bp[0], bp[1]};
  mma_probe_qmma<kByteId>(acc, af, bf, sfa, sfb);
}

// One warp accumulates kBlocks K=128 blocks: a [kBlocks*4][32 lanes][4] and
// b [kBlocks*4][32][2] fragment words, sfa/sfb [kBlocks][32] packed scale
// words, d [32][4] floats.
template <int kBlocks>
__device__ __forceinline__ void mma_probe(const u32* __restrict__ a, const u32* __restrict__ b,
                                          const u32* __restrict__ sfa, const u32* __restrict__ sfb,
                                          float* __restrict__ d) {
  const u32 lane = threadIdx.x & 31u;
  float acc[4] = {0.f, 0.f, 0.f, 0.f};
  for (u32 k = 0; k < u32(kBlocks); ++k) {
    const u32 sa = sfa[k * 32 + lane], sb = sfb[k * 32 + lane];
    mma_probe_step<0>(acc, a, b, k * 4 + 0, lane, sa, sb);
    mma_probe_step<1>(acc, a, b, k * 4 + 1, lane, sa, sb);
    mma_probe_step<2>(acc, a, b, k * 4 + 2, lane, sa, sb);
    mma_probe_step<3>(acc, a, b, k * 4 + 3, lane, sa, sb);
  }
#pragma unroll
  for (int i = 0; i < 4; ++i) d[lane * 4 + i] = acc[i];
}

}  // namespace moejit
