#pragma once
// The compute role's epilogues (ComputeRole, declared in moe_compute.cuh, which includes this file after the
// class): biases, GEMM1's gated activation and requantization into the handoff (released to GEMM2 per K128
// block), GEMM2's route rows into the combine arena or the unit schedule's partial rows.

namespace moejit {

// The biases (config.biases): GEMM1's b1 on gate and up before the
// activation; GEMM2's b2 times the route weight, so that the k route rows
// sum to y = sum_j w_j (W2 act_j + b2).
template <class Config>
template <int N>
__device__ void ComputeRole<Config>::add_biases(const ComputeParams& p, const Segment& sg, const int (&route)[N / 4],
                                                float (&acc)[kT][N / 2], int pair) {
  const int group = pair, warp = (threadIdx.x / 32) % 4, lane = threadIdx.x % 32;
  const int g = lane / 4, t = lane % 4;
#pragma unroll
  for (int u = 0; u < kT; ++u) {
    const int tile = sg.mt * kTiles + group * kT + u;
    if (sg.phase == 0) {
      const float2 b = p.b1[u64(sg.expert) * kInter + tile * 32 + warp * 8 + g];
#pragma unroll
      for (int i = 0; i < N / 8; ++i)
#pragma unroll
        for (int q = 0; q < 2; ++q) acc[u][4 * i + q] += b.x, acc[u][4 * i + 2 + q] += b.y;
    } else {
      const float* b = p.b2 + u64(sg.expert) * kHidden + tile * 64 + warp * 16 + g;
      const float lo = b[0], hi = b[8];
#pragma unroll
      for (int i = 0; i < N / 8; ++i)
#pragma unroll
        for (int q = 0; q < 2; ++q) {
          const float w = 8 * i + 2 * t + q < sg.rows ? weight_of(p, route[2 * i + q]) : 0.0f;
          acc[u][4 * i + q] = fmaf(w, lo, acc[u][4 * i + q]);
          acc[u][4 * i + 2 + q] = fmaf(w, hi, acc[u][4 * i + 2 + q]);
        }
    }
  }
}

// Rows g / g+8 of warp w's slice of each of the warpgroup's tiles are gate
// / up of intermediate column 32 * tile + 8w + g: clamped SwiGLU, route
// weight, then the handoff in the atom's format (MXFP8 per token column over
// the tile's 32 columns, one K32 block of GEMM2; or BF16 for W4A16); then
// each tile is released to GEMM2 on its K128 block of I.
template <class Config>
template <int N>
__device__ void ComputeRole<Config>::gemm1_epilogue(const ComputeParams& p, const Segment& sg, const Workspace& ws,
                                                    const int (&route)[N / 4], const float (&acc)[kT][N / 2],
                                                    float* s_amax) {
  const int group = threadIdx.x / 128, warp = (threadIdx.x / 32) % 4, lane = threadIdx.x % 32;
  const int g = lane / 4, t = lane % 4;
  const float clamp_bf16 = round_bf16(p.clamp), alpha = p.alpha;
  float weight[N / 4];
#pragma unroll
  for (int c = 0; c < N / 4; ++c) {
    const int col = 8 * (c / 2) + 2 * t + c % 2;
    weight[c] = col < sg.rows ? weight_of(p, route[c]) : 0.0f;
  }
  if constexpr (Atom::kBf16Handoff) {
    // W4A16: each element rounds to BF16 on its own; no block amax to share.
#pragma unroll
    for (int u = 0; u < kT; ++u) {
      const int i_col = (sg.mt * kTiles + group * kT + u) * 32 + warp * 8 + g;
#pragma unroll
      for (int i = 0; i < N / 8; ++i)
#pragma unroll
        for (int q = 0; q < 2; ++q) {
          const int col = 8 * i + 2 * t + q;
          if (col >= sg.rows) continue;
          const float a = gated_activation<kActivation>(acc[u][4 * i + q], acc[u][4 * i + 2 + q], clamp_bf16, alpha) *
                          weight[2 * i + q];
          handoff_bf16(ws, route[2 * i + q], i_col) = float_to_bf16_rne(a);
        }
    }
  } else {
    gemm1_requantize<N>(sg, ws, route, acc, s_amax, weight, clamp_bf16, alpha);
  }
  // One release after the barrier publishes the warpgroup's handoff (as stream_pieces' flag).
  named_barrier_sync(kGroupBarrier + group, 128);
  if (threadIdx.x % 128 == 0)
#pragma unroll
    for (int u = 0; u < kT; ++u) red_release_gpu_add(ws.ready + sg.a * kKb2 + (sg.mt * kTiles + group * kT + u) / 4, 1);
}

// The w4a8-mx handoff: MXFP8 of the weighted activation per token column over the tile's 32 columns.
template <class Config>
template <int N>
__device__ void ComputeRole<Config>::gemm1_requantize(const Segment& sg, const Workspace& ws, const int (&route)[N / 4],
                                                      const float (&acc)[kT][N / 2], float* s_amax,
                                                      const float (&weight)[N / 4], float clamp_bf16, float alpha) {
  // kPairedShort: the thread's index read here (an asm the compiler cannot hoist), else the SMEM addresses
  // derived from it stay live across its two GEMM1 loops and spill at the 128-register cap. (The other kernels
  // spill with it.)
  const u32 tid = kPaired == contract::kPairedShort ? u32(fresh_thread_index()) : threadIdx.x;
  const int group = tid / 128, warp = (tid / 32) % 4, lane = tid % 32;
  const int g = lane / 4, t = lane % 4;
  float v[kT][N / 4];
#pragma unroll
  for (int u = 0; u < kT; ++u) {
    float* amax_of = s_amax + (group * kT + u) * contract::kConsumerWarps * kTileN;
#pragma unroll
    for (int i = 0; i < N / 8; ++i)
#pragma unroll
      for (int q = 0; q < 2; ++q) {
        const int col = 8 * i + 2 * t + q;
        float a = 0.0f;
        if (col < sg.rows)
          a = gated_activation<kActivation>(acc[u][4 * i + q], acc[u][4 * i + 2 + q], clamp_bf16, alpha) *
              weight[2 * i + q];
        v[u][2 * i + q] = a;
        float m = fabsf(a);
        m = fmaxf(m, __shfl_xor_sync(0xFFFFFFFFu, m, 4));
        m = fmaxf(m, __shfl_xor_sync(0xFFFFFFFFu, m, 8));
        m = fmaxf(m, __shfl_xor_sync(0xFFFFFFFFu, m, 16));
        if (g == 0) amax_of[warp * kTileN + col] = m;
      }
  }
  named_barrier_sync(kGroupBarrier + group, 128);
#pragma unroll
  for (int u = 0; u < kT; ++u) {
    const float* amax_of = s_amax + (group * kT + u) * contract::kConsumerWarps * kTileN;
    const int i_col = (sg.mt * kTiles + group * kT + u) * 32 + warp * 8 + g;
#pragma unroll
    for (int i = 0; i < N / 8; ++i)
#pragma unroll
      for (int q = 0; q < 2; ++q) {
        const int col = 8 * i + 2 * t + q;
        if (col >= sg.rows) continue;
        float amax = amax_of[col];
#pragma unroll
        for (int w = 1; w < contract::kConsumerWarps; ++w) amax = fmaxf(amax, amax_of[w * kTileN + col]);
        const u32 code = mx_e4m3_scale_code(amax);
        const u32 q8 = float2_to_e4m3x2(v[u][2 * i + q] * exact_pow2(127 - int(code)), 0.0f) & 0xFFu;
        store_handoff(ws, route[2 * i + q], i_col, q8, code, warp == 0 && g == 0);
      }
  }
}

template <class Config>
__device__ void ComputeRole<Config>::store_handoff(const Workspace& ws, int route, int i, u32 q8, u32 code,
                                                   bool block_owner) {
  if constexpr (kFp8Rows) {
    ws.handoff[u64(route) * kInter + i] = u8(q8);
    if (!block_owner) return;
    if constexpr (Atom::kF32ScaleRecords)
      reinterpret_cast<float*>(
          ws.handoff_s)[(u64(route) * kKb2 + i / 128) * (contract::kScaleRecordBytes / 4) + (i / 32) % 4] =
          Atom::scale_value(code);
    else
      reinterpret_cast<u8*>(ws.handoff_s)[(u64(route) * kKb2 + i / 128) * contract::kScaleRecordBytes + (i / 32) % 4] =
          u8(code);
  } else {
    handoff_bf16(ws, route, i) = mxfp8_to_bf16(q8, code);
  }
}

// Element i of a route's BF16 handoff row (the BF16-row atoms).
template <class Config>
__device__ u16& ComputeRole<Config>::handoff_bf16(const Workspace& ws, int route, int i) {
  return reinterpret_cast<u16*>(ws.handoff)[u64(route) * kInter + i];
}

// GEMM2's sums by output row: store(route, h, rows h and h + 8) for each of this thread's rows h of the
// warpgroup's tiles and each of its token columns below sg.rows.
template <class Config>
template <int N, class Store>
__device__ void ComputeRole<Config>::gemm2_rows(const Segment& sg, const int (&route)[N / 4],
                                                const float (&acc)[kT][N / 2], int pair, Store store) {
  const int group = pair, warp = (threadIdx.x / 32) % 4, lane = threadIdx.x % 32;
  const int g = lane / 4, t = lane % 4;
#pragma unroll
  for (int u = 0; u < kT; ++u) {
    const int h = (sg.mt * kTiles + group * kT + u) * 64 + warp * 16 + g;
#pragma unroll
    for (int i = 0; i < N / 8; ++i)
#pragma unroll
      for (int q = 0; q < 2; ++q)
        if (8 * i + 2 * t + q < sg.rows) store(route[2 * i + q], h, acc[u][4 * i + q], acc[u][4 * i + 2 + q]);
  }
}

// Rows h and h+8 of each route's output row, in BF16.
template <class Config>
template <int N>
__device__ void ComputeRole<Config>::gemm2_epilogue(const Segment& sg, const Workspace& ws, const int (&route)[N / 4],
                                                    const float (&acc)[kT][N / 2]) {
  gemm2_rows<N>(sg, route, acc, threadIdx.x / 128, [&](int r, int h, float lo, float hi) {
    u16* out =
        kRanks > 1 ? ep(reinterpret_cast<const u8*>(ws.header)).arena_row(r, kHidden) : ws.arena + u64(r) * kHidden;
    out[h] = float_to_bf16_rne(lo);
    out[h + 8] = float_to_bf16_rne(hi);
  });
}

// The unit schedule's GEMM2: rows h and h + 8 of each route's FP32 partial row of K block sg.k0
// (contract::unit_partial_bytes), unrounded: finalize adds the I/128 blocks, then rounds the route row.
template <class Config>
template <int N>
__device__ void ComputeRole<Config>::unit_epilogue(const ComputeParams& p, const Segment& sg, const Workspace& ws,
                                                   const int (&route)[N / 4], const float (&acc)[kT][N / 2], int pair) {
  const u64 routed = u64(p.tokens) * kTopK;
  gemm2_rows<N>(sg, route, acc, pair, [&](int r, int h, float lo, float hi) {
    const u64 row = kShared && r >= kSharedRoute0 ? routed + u64(r - kSharedRoute0) : u64(r);
    float* out = ws.partials + (row * kKb2 + u64(sg.k0)) * kHidden;
    out[h] = lo;
    out[h + 8] = hi;
  });
}

}  // namespace moejit
