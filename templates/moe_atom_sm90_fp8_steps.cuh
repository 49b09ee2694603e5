#pragma once
// The fast sm_90a atom's operands of one K128 step (moe_atom_sm90_fp8.cuh): a lane's UE8M0 scale words as
// FP32 powers of two (StepScales), its weight words and scales read from a stage (StepOperands), and the wait
// for the next stage (next_stage).

#include "moe_pipeline.cuh"

namespace moejit {

// 2^(code - 127) as FP32 for byte j of a UE8M0 scale word: the byte moved to
// the exponent field, then code 0 raised to its subnormal 2^-127 (0x00400000),
// three integer operations; every code 0..254 is exact. Without kSubnormal,
// two: code 0 reads as 0.0, which changes no product where every value the
// scale multiplies is zero (weights whose code-0 blocks are all zeros:
// codegen::MoeCodegenOptions::subnormal_weight_scales false).
template <int kJ, bool kSubnormal = true>
__device__ __forceinline__ float ue8m0_byte_value(u32 word) {
  const u32 field = (kJ == 3 ? word >> 1 : word << (23 - 8 * kJ)) & 0x7F800000u;
  return __uint_as_float(kSubnormal ? max(field, 0x00400000u) : field);
}

// A lane's scale words of one K128 step: its weight rows' (g and g+8 of each
// tile) and its token columns' (8i + 2t + q), byte j = K32 block j.
// wv<J>(u, h) is 2^(code - 127) of K32 block J for weight row g (h = 0) or
// g + 8 (h = 1) of tile u, xv<J>(c) the same for the lane's token column c.
template <int N, int T, bool kDecoded, bool kSubnormal>
struct StepScales {
  u32 w[T][2];
  float4 x[N / 4];  // the staged FP32 records (AtomSm90Fp8::kF32ScaleRecords)
  template <int J>
  __device__ float wv(int u, int h) const {
    return ue8m0_byte_value<J, kSubnormal>(w[u][h]);
  }
  template <int J>
  __device__ float xv(int c) const {
    return J == 0 ? x[c].x : J == 1 ? x[c].y : J == 2 ? x[c].z : x[c].w;
  }
};
// The same decoded by the decoder warp (StageRing::kDecoded): four FP32 scales a row or column.
template <int N, int T, bool kSubnormal>
struct StepScales<N, T, true, kSubnormal> {
  float w[T][2][4], x[N / 4][4];
  template <class Ring>
  __device__ void load(const Ring& ring, int s) {
    const int tile0 = (threadIdx.x / 128) * T, warp = (threadIdx.x / 32) % contract::kConsumerWarps;
    const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
#pragma unroll
    for (int u = 0; u < T; ++u)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const float4 v = *reinterpret_cast<const float4*>(ring.w_scales_dec(s, tile0 + u, 16 * warp + g + 8 * h));
        w[u][h][0] = v.x, w[u][h][1] = v.y, w[u][h][2] = v.z, w[u][h][3] = v.w;
      }
#pragma unroll
    for (int c = 0; c < N / 4; ++c) {
      const float4 v = *reinterpret_cast<const float4*>(ring.x_scales_dec(s, 8 * (c / 2) + 2 * t + c % 2));
      x[c][0] = v.x, x[c][1] = v.y, x[c][2] = v.z, x[c][3] = v.w;
    }
  }
  template <int J>
  __device__ float wv(int u, int h) const {
    return w[u][h][J];
  }
  template <int J>
  __device__ float xv(int c) const {
    return x[c][J];
  }
};
// A lane's operands of one K128 step: the weight words (rows g and g+8 of K32
// blocks 0..3 of each of the warpgroup's tiles) and the scale words. Decoded
// scales are not read ahead with the words: two steps' FP32 scales would not
// fit beside the partial sums (the loops read them after the MMAs' wait).
template <int N, int T, bool kDecoded, bool kSubnormal>
struct StepOperands {
  u32 words[T][8];
  StepScales<N, T, kDecoded, kSubnormal> scales;

  // The warpgroup's tiles of stage s. Written out rather than from the helpers below: built from them, the
  // stream kernels' loops allocate their registers differently (their SASS changed).
  template <class Ring>
  __device__ void load(const Ring& ring, int s) {
    const int tile0 = (threadIdx.x / 128) * T, warp = (threadIdx.x / 32) % contract::kConsumerWarps;
    const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
#pragma unroll
    for (int u = 0; u < T; ++u) {
      const u8* w = ring.w_step(s, tile0 + u) + warp * 1024 + lane * 16;
      const uint4 h0 = *reinterpret_cast<const uint4*>(w);
      const uint4 h1 = *reinterpret_cast<const uint4*>(w + 512);
      words[u][0] = h0.x, words[u][1] = h0.y, words[u][2] = h0.z, words[u][3] = h0.w;
      words[u][4] = h1.x, words[u][5] = h1.y, words[u][6] = h1.z, words[u][7] = h1.w;
      if constexpr (!kDecoded) {
        scales.w[u][0] = ring.w_scales(s, tile0 + u)[16 * warp + g];
        scales.w[u][1] = ring.w_scales(s, tile0 + u)[16 * warp + g + 8];
      }
    }
    if constexpr (!kDecoded) {
#pragma unroll
      for (int i = 0; i < N / 8; ++i) {
        scales.x[2 * i] = *reinterpret_cast<const float4*>(ring.x_scale_record(s, 8 * i + 2 * t));
        scales.x[2 * i + 1] = *reinterpret_cast<const float4*>(ring.x_scale_record(s, 8 * i + 2 * t + 1));
      }
    }
  }
  // The words of tiles tile0 .. tile0 + T - 1 of stage s.
  template <class Ring>
  __device__ void load_words(const Ring& ring, int s, int tile0) {
#pragma unroll
    for (int u = 0; u < T; ++u) tile_words(ring, s, tile0 + u, u);
  }
  // Their scale words and the stage's token columns' (UE8M0: no decoder warp), into sc.
  template <class Ring>
  __device__ static void load_scales(const Ring& ring, int s, int tile0, StepScales<N, T, false, kSubnormal>& sc) {
#pragma unroll
    for (int u = 0; u < T; ++u) tile_scales(ring, s, tile0 + u, sc.w[u]);
    column_scales(ring, s, sc.x);
  }

 private:
  template <class Ring>
  __device__ void tile_words(const Ring& ring, int s, int tile, int u) {
    const int warp = (threadIdx.x / 32) % contract::kConsumerWarps, lane = threadIdx.x % 32;
    const u8* w = ring.w_step(s, tile) + warp * 1024 + lane * 16;
    const uint4 h0 = *reinterpret_cast<const uint4*>(w);
    const uint4 h1 = *reinterpret_cast<const uint4*>(w + 512);
    words[u][0] = h0.x, words[u][1] = h0.y, words[u][2] = h0.z, words[u][3] = h0.w;
    words[u][4] = h1.x, words[u][5] = h1.y, words[u][6] = h1.z, words[u][7] = h1.w;
  }
  template <class Ring>
  __device__ static void tile_scales(const Ring& ring, int s, int tile, u32 (&w)[2]) {
    const int warp = (threadIdx.x / 32) % contract::kConsumerWarps, g = threadIdx.x % 32 / 4;
    w[0] = ring.w_scales(s, tile)[16 * warp + g];
    w[1] = ring.w_scales(s, tile)[16 * warp + g + 8];
  }
  template <class Ring>
  __device__ static void column_scales(const Ring& ring, int s, float4 (&x)[N / 4]) {
    const int t = threadIdx.x % 4;
#pragma unroll
    for (int i = 0; i < N / 8; ++i) {
      x[2 * i] = *reinterpret_cast<const float4*>(ring.x_scale_record(s, 8 * i + 2 * t));
      x[2 * i + 1] = *reinterpret_cast<const float4*>(ring.x_scale_record(s, 8 * i + 2 * t + 1));
    }
  }
};

// The stage of the next step, waited for unless there is none (`more` false:
// the caller's reads then hit a stage nobody filled, and are never used).
template <class Ring, class Cursor>
__device__ __forceinline__ int next_stage(const Ring& ring, Cursor& cur, bool more) {
  const int s = cur.stage;
  if (more) {
    wait_full(ring, s, cur.phase);
    cur.advance();
  }
  return s;
}

}  // namespace moejit
