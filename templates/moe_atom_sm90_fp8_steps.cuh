#pragma once
// The fast sm_90a atom's operands of one K128 step (moe_atom_sm90_fp8.cuh): a lane's UE8M0 scale words as
// FP32 powers of two (StepScales), its weight words and scales read from a stage (StepOperands), the wait
// for the next stage (next_stage), and the arithmetic of a step around its wgmmas (Sm90Fp8StepMath): the
// weight words' E4M3 placement and the FP32 promotion of the K32 partial sums.

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
// A step's scales with every activation scale read as 1 (AtomSm90Fp8::kloop's kTokenFrame).
template <class Scales>
struct WeightScalesOnly {
  const Scales& s;
  template <int J>
  __device__ float wv(int u, int h) const {
    return s.template wv<J>(u, h);
  }
  template <int J>
  __device__ float xv(int) const {
    return 1.0f;
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

// The stage of the next step, waited for; where there is none (`more` false), `held`, a stage the caller has
// waited for and not yet released: the loops read the next step's operands unconditionally (a register that
// feeds a wgmma is not written on a branch), and those reads, never used, must not touch a stage the producers
// may be filling for the next segment (racecheck reported them against the fill's writes).
template <class Ring, class Cursor>
__device__ __forceinline__ int next_stage(const Ring& ring, Cursor& cur, bool more, int held) {
  const int s = cur.stage;
  if (!more) return held;
  wait_full(ring, s, cur.phase);
  cur.advance();
  return s;
}

// The atom's arithmetic around its wgmmas (AtomSm90Fp8's base): the E4M3 placement of weight words and the
// FP32 promotion of a group's K32 partial sums into the accumulators.
struct Sm90Fp8StepMath {
 protected:
  // acc += the group's partial sums (GEMM1 split rows: a lane's 2N-column sum holds its large columns' N/2
  // values, then the small columns', added in FP32 first; the wgmma D fragment: value i is column
  // 8 (i / 4) + 2t + i % 2) times their K32 blocks' scales.
  template <int N, int T, bool kSplit, int kJ, bool kPaired, int kP, class Scales>
  __device__ static void scale_group(float (&acc)[T][N / 2], float (&part)[T][kJ][kP], const Scales& now, int h) {
#pragma unroll
    for (int u = 0; u < T; ++u)
#pragma unroll
      for (int j = 0; j < kJ; ++j) {
        if constexpr (kPaired) {
          // Columns 2t and 2t + 1 are token t's large and small rows; rows g, g + 8 of the tile.
          const float lo = part[u][j][0] + part[u][j][1], hi = part[u][j][2] + part[u][j][3];
          switch (h * kJ + j) {
            case 0: promote_paired<0>(acc[u], lo, hi, now, u); break;
            case 1: promote_paired<1>(acc[u], lo, hi, now, u); break;
            case 2: promote_paired<2>(acc[u], lo, hi, now, u); break;
            default: promote_paired<3>(acc[u], lo, hi, now, u); break;
          }
        } else {
          float sum[N / 2];
#pragma unroll
          for (int i = 0; i < N / 2; ++i) {
            if constexpr (kSplit)
              sum[i] = part[u][j][i] + part[u][j][N / 2 + i];
            else
              sum[i] = part[u][j][i];
          }
          switch (h * kJ + j) {
            case 0: promote<N, 0>(acc[u], sum, now, u); break;
            case 1: promote<N, 1>(acc[u], sum, now, u); break;
            case 2: promote<N, 2>(acc[u], sum, now, u); break;
            default: promote<N, 3>(acc[u], sum, now, u); break;
          }
        }
      }
  }

  template <int T, int kJ, int kP>
  __device__ static void zero(float (&part)[T][kJ][kP]) {
#pragma unroll
    for (int u = 0; u < T; ++u)
#pragma unroll
      for (int j = 0; j < kJ; ++j)
#pragma unroll
        for (int i = 0; i < kP; ++i) part[u][j][i] = 0.0f;
  }

  // The E4M3 placement of K32 blocks h kJ .. h kJ + kJ - 1 of a step's weight words.
  template <int T, int kJ>
  __device__ static void expand_group(const u32 (&words)[T][8], u32 (&a)[T][kJ][4], int h) {
#pragma unroll
    for (int u = 0; u < T; ++u)
#pragma unroll
      for (int j = 0; j < kJ; ++j) {
        const u32 lo = words[u][2 * (h * kJ + j)], hi = words[u][2 * (h * kJ + j) + 1];  // rows g, g+8
        a[u][j][0] = lo & 0x9C9C9C9Cu;
        a[u][j][1] = hi & 0x9C9C9C9Cu;
        a[u][j][2] = ((lo << 2) & 0x8C8C8C8Cu) | ((lo >> 2) & 0x10101010u);
        a[u][j][3] = ((hi << 2) & 0x8C8C8C8Cu) | ((hi >> 2) & 0x10101010u);
      }
  }
  // The E4M3 placement of a step's weight words (rows g and g+8 of K32 blocks 0..3).
  template <int T>
  __device__ static void expand(const u32 (&words)[T][8], u32 (&a)[T][4][4]) {
#pragma unroll
    for (int u = 0; u < T; ++u)
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const u32 lo = words[u][2 * j], hi = words[u][2 * j + 1];  // rows g, g+8
        a[u][j][0] = lo & 0x9C9C9C9Cu;
        a[u][j][1] = hi & 0x9C9C9C9Cu;
        a[u][j][2] = ((lo << 2) & 0x8C8C8C8Cu) | ((lo >> 2) & 0x10101010u);
        a[u][j][3] = ((hi << 2) & 0x8C8C8C8Cu) | ((hi >> 2) & 0x10101010u);
      }
  }

  __device__ static void store_pow2s(float* dst, u32 word) {
    *reinterpret_cast<float4*>(dst) = make_float4(ue8m0_byte_value<0>(word), ue8m0_byte_value<1>(word),
                                                  ue8m0_byte_value<2>(word), ue8m0_byte_value<3>(word));
  }

  // promote for paired rows: token t's sums of rows g and g + 8 into acc[0] and acc[2] (its record sits at
  // column 2t), the same products as promote's for column 2t of the 16-column split.
  template <int J, class Scales>
  __device__ static void promote_paired(float (&acc)[4], float lo, float hi, const Scales& now, int u) {
    const float x = now.template xv<J>(0);
    acc[0] = fmaf(lo, x * now.template wv<J>(u, 0), acc[0]);
    acc[2] = fmaf(hi, x * now.template wv<J>(u, 1), acc[2]);
  }
  // Paired rows' sums (token t in lane 4g + t, t < 4) into the 8-column layout (value i: column 2t + i % 2, row
  // g or g + 8), zero in columns 4..7.
  template <int T>
  __device__ static void unpair(float (&acc)[T][4]) {
    const int lane = threadIdx.x % 32, t = lane % 4, quad = lane & ~3;
#pragma unroll
    for (int u = 0; u < T; ++u) {
      const float g0 = acc[u][0], g8 = acc[u][2];
      const float a = __shfl_sync(0xFFFFFFFFu, g0, quad + (2 * t) % 4),
                  b = __shfl_sync(0xFFFFFFFFu, g0, quad + (2 * t + 1) % 4);
      const float c = __shfl_sync(0xFFFFFFFFu, g8, quad + (2 * t) % 4),
                  d = __shfl_sync(0xFFFFFFFFu, g8, quad + (2 * t + 1) % 4);
      acc[u][0] = t < 2 ? a : 0.0f, acc[u][1] = t < 2 ? b : 0.0f, acc[u][2] = t < 2 ? c : 0.0f,
      acc[u][3] = t < 2 ? d : 0.0f;
    }
  }

  // acc += part * 2^(s_x - 127) * 2^(s_w - 127) for K32 block J of the step.
  template <int N, int J, class Scales>
  __device__ static void promote(float (&acc)[N / 2], const float (&part)[N / 2], const Scales& now, int u) {
    const float w_lo = now.template wv<J>(u, 0), w_hi = now.template wv<J>(u, 1);
#pragma unroll
    for (int i = 0; i < N / 8; ++i) {
      const float x0 = now.template xv<J>(2 * i), x1 = now.template xv<J>(2 * i + 1);
      // The scale product first: 2^(s_w + s_x - 254) is exact whenever it is an FP32 value, while
      // part * 2^(s_x - 127) alone may overflow for a large s_x that a small s_w compensates.
      acc[4 * i + 0] = fmaf(part[4 * i + 0], x0 * w_lo, acc[4 * i + 0]);
      acc[4 * i + 1] = fmaf(part[4 * i + 1], x1 * w_lo, acc[4 * i + 1]);
      acc[4 * i + 2] = fmaf(part[4 * i + 2], x0 * w_hi, acc[4 * i + 2]);
      acc[4 * i + 3] = fmaf(part[4 * i + 3], x1 * w_hi, acc[4 * i + 3]);
    }
  }
};

}  // namespace moejit
