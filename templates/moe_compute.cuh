#pragma once
// Role 2, compute: a persistent grid of resident CTAs walks one item list,
// GEMM1 items (64 interleaved gate/up weight rows x one token tile) first,
// then GEMM2 items (64 rows of H x one token tile). Swap-AB: weights on M,
// tokens on N, so the weight pipeline never depends on the token count.
//
// Warps 0-3 are math warps (one M16 slice each), warp 4 is the producer: the
// weight tile arrives by TMA, its scale words and the gathered token rows by
// bulk copies, all on one arrival barrier per stage.
//
// GEMM1 epilogue: clamped SwiGLU (BF16-rounded operands), route weight,
// MXFP8 requantization per 32 intermediate columns (exactly this tile's
// columns, thanks to the gate/up interleave), BF16 image into the handoff,
// then a release-add on the expert's l1_done counter. A GEMM2 item's producer
// acquires that counter before it reads the handoff. GEMM2 writes each
// route's BF16 output row into the combine arena.

#include "moe_atom_sm90.cuh"
#if defined(__CUDA_ARCH_FEAT_SM120_ALL) || defined(__CUDA_ARCH_FEAT_SM121_ALL)
#include "moe_atom_sm120.cuh"
#endif
#include "moe_ptx.cuh"
#include "moe_workspace.cuh"

namespace moejit {

constexpr int kComputeMathWarps = 4;
constexpr int kComputeThreads = 32 * (kComputeMathWarps + 1);
constexpr int kWeightTileBytes = 64 * 64;  // 64 rows x K128 nibbles

// One pipeline stage: a K128 slice of the weight tile, its scale words, and
// the token rows in the atom's staging format (padded rows: conflict-free ldmatrix).
template <int kTileN, int kXRowBytes>
struct ComputeStage {
  u8 w[kWeightTileBytes];
  u32 s[64];
  u8 x[kTileN * kXRowBytes];
};

struct ComputeItem {
  bool gemm2;
  int active;  // active expert index
  int expert;
  int m_tile;  // 64-row weight tile
  int rows;    // token columns in this item (<= tile_n)
  int base;    // position of column 0 in the expert-sorted route list
  int token_tiles;
};

template <int kTileN>
__device__ ComputeItem decode_item(const MoeWorkspace& ws, int item, int n_active, int items1) {
  ComputeItem it;
  it.gemm2 = item >= items1;
  const int* begin = it.gemm2 ? ws.item_begin2 : ws.item_begin1;
  int lo = 0, hi = n_active - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (begin[mid] <= item)
      lo = mid;
    else
      hi = mid - 1;
  }
  it.active = lo;
  it.expert = ws.active_expert[lo];
  const int expert_rows = ws.active_rows[lo];
  it.token_tiles = (expert_rows + kTileN - 1) / kTileN;
  const int local = item - begin[lo];
  it.m_tile = local / it.token_tiles;
  const int col0 = (local % it.token_tiles) * kTileN;
  it.rows = min(kTileN, expert_rows - col0);
  it.base = ws.active_base[lo] + col0;
  return it;
}

__device__ __forceinline__ float round_bf16(float v) {
  return bf16_to_float(float_to_bf16_rne(v));
}

// act = g' * sigmoid(g') * u' with g' = min(g, c), u' = clamp(u, -c, c); c, g', u'
// rounded to BF16 (seed §5.4). Comparisons are written so that NaN propagates.
__device__ __forceinline__ float clamped_swiglu(float gate, float up, float clamp_bf16) {
  const float g = round_bf16(gate > clamp_bf16 ? clamp_bf16 : gate);
  const float u = round_bf16(up > clamp_bf16 ? clamp_bf16 : (up < -clamp_bf16 ? -clamp_bf16 : up));
  const float sigmoid = 1.0f / (1.0f + expf(-g));
  return g * sigmoid * u;
}

template <int kHidden, int kInter, int kTopK, int kTileN, int kStages, class Atom>
__device__ void moe_compute(const void* w1_map, const void* w2_map, const u32* __restrict__ w1_scales,
                            const u32* __restrict__ w2_scales, const float* __restrict__ topk_weights, float clamp,
                            const MoeWorkspace& ws) {
  constexpr int kTiles1 = 2 * kInter / 64;                          // GEMM1 items per token tile of an expert
  constexpr int kBlocks1 = kHidden / 128, kBlocks2 = kInter / 128;  // K128 steps
  constexpr int kGroups = kTileN / 8;
  using Stage = ComputeStage<kTileN, Atom::kXRowBytes>;
  extern __shared__ __align__(128) u8 smem[];
  Stage* stages = reinterpret_cast<Stage*>(smem);
  u64* full = reinterpret_cast<u64*>(smem + kStages * sizeof(Stage));
  u64* empty = full + kStages;
  float* s_amax = reinterpret_cast<float*>(empty + kStages);  // [4][kTileN]

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages; ++s) {
      mbar_init(&full[s], 1);
      mbar_init(&empty[s], kComputeMathWarps);
    }
    fence_barrier_init();
  }
  __syncthreads();
  // Everything below reads what the dispatch role wrote.
  griddep_wait();

  const int n_active = ws.header->n_active;
  const int items1 = ws.header->items1;
  const int items = items1 + ws.header->items2;
  int stage = 0;
  u32 phase = 0;

  if (warp == kComputeMathWarps) {
    // ---------------- producer ----------------
    if (lane == 0) {
      prefetch_tensormap(w1_map);
      prefetch_tensormap(w2_map);
    }
    constexpr int kRowsPerLane = (kTileN + 31) / 32;
    for (int item = blockIdx.x; item < items; item += gridDim.x) {
      const ComputeItem it = decode_item<kTileN>(ws, item, n_active, items1);
      if (it.gemm2) {
        // The handoff rows of this expert are complete once every GEMM1 item released.
        if (lane == 0) {
          const int* done = ws.l1_done + it.active;
          const int target = ws.l1_target[it.active];
          // Monotone counter: wrap-safe comparison against this forward's target.
          while (ld_acquire_gpu(done) - target < 0) __nanosleep(64);
          fence_proxy_async_global();
        }
        __syncwarp();
      }
      const u8* row_src[kRowsPerLane];
#pragma unroll
      for (int r = 0; r < kRowsPerLane; ++r) {
        const int col = lane + 32 * r;
        row_src[r] = nullptr;
        if (col < it.rows) {
          const int pos = it.base + col;
          row_src[r] = it.gemm2 ? Atom::template gemm2_row<kInter>(ws, pos)
                                : Atom::template gemm1_row<kHidden>(ws, ws.route_slot[pos] / kTopK);
        }
      }
      const int k_blocks = it.gemm2 ? kBlocks2 : kBlocks1;
      const int n_rows = it.gemm2 ? kHidden : 2 * kInter;
      const void* map = it.gemm2 ? w2_map : w1_map;
      const u32* scales = it.gemm2 ? w2_scales : w1_scales;
      for (int kb = 0; kb < k_blocks; ++kb) {
        mbar_wait(&empty[stage], phase ^ 1u);
        Stage& st = stages[stage];
        const int row = (it.expert * k_blocks + kb) * n_rows + it.m_tile * 64;
        if (lane == 0) {
          mbar_expect_tx(&full[stage], kWeightTileBytes + 256 + Atom::kXChunkBytes * it.rows);
          tma_load_2d(st.w, map, &full[stage], 0, row);
          bulk_load(st.s, scales + row, 256, &full[stage]);
        }
        __syncwarp();
#pragma unroll
        for (int r = 0; r < kRowsPerLane; ++r)
          if (row_src[r])
            bulk_load(st.x + (lane + 32 * r) * Atom::kXRowBytes, row_src[r] + Atom::kXChunkBytes * kb,
                      Atom::kXChunkBytes, &full[stage]);
        if (++stage == kStages) stage = 0, phase ^= 1u;
      }
    }
    return;
  }

  // ---------------- math warps ----------------
  const int g = lane / 4, t = lane % 4;
  const float clamp_bf16 = round_bf16(clamp);
  for (int item = blockIdx.x; item < items; item += gridDim.x) {
    const ComputeItem it = decode_item<kTileN>(ws, item, n_active, items1);
    const int groups = (it.rows + 7) / 8;
    float acc[kGroups][4];
#pragma unroll
    for (int ng = 0; ng < kGroups; ++ng) acc[ng][0] = acc[ng][1] = acc[ng][2] = acc[ng][3] = 0.0f;

    const int k_blocks = it.gemm2 ? kBlocks2 : kBlocks1;
    typename Atom::template Columns<kGroups> columns;
    Atom::template load_columns<kHidden, kInter, kTopK>(columns, ws, it.base, it.rows, it.gemm2);
    for (int kb = 0; kb < k_blocks; ++kb) {
      mbar_wait(&full[stage], phase);
      const Stage& st = stages[stage];
      const int row_lo = 16 * warp + g;
      const uint4 w_lo = *reinterpret_cast<const uint4*>(st.w + row_lo * 64 + t * 16);
      const uint4 w_hi = *reinterpret_cast<const uint4*>(st.w + (row_lo + 8) * 64 + t * 16);
      Atom::template k128_step<kGroups>(acc, w_lo, w_hi, st.s[row_lo], st.s[row_lo + 8], st.x, groups, columns, kb);
      __syncwarp();
      if (lane == 0) mbar_arrive(&empty[stage]);
      if (++stage == kStages) stage = 0, phase ^= 1u;
    }

    if (!it.gemm2) {
      // Rows g / g+8 of this warp's slice are gate / up of intermediate column i.
      const int i = it.m_tile * 32 + warp * 8 + g;
      float a[kGroups][2];
#pragma unroll
      for (int ng = 0; ng < kGroups; ++ng) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int col = ng * 8 + 2 * t + h;
          a[ng][h] = 0.0f;
          if (col < it.rows) {
            const float weight = topk_weights[ws.route_slot[it.base + col]];
            a[ng][h] = clamped_swiglu(acc[ng][h], acc[ng][2 + h], clamp_bf16) * weight;
          }
          float m = fabsf(a[ng][h]);
          m = fmaxf(m, __shfl_xor_sync(0xFFFFFFFFu, m, 4));
          m = fmaxf(m, __shfl_xor_sync(0xFFFFFFFFu, m, 8));
          m = fmaxf(m, __shfl_xor_sync(0xFFFFFFFFu, m, 16));
          if (g == 0) s_amax[warp * kTileN + col] = m;
        }
      }
      named_barrier_sync(1, 32 * kComputeMathWarps);
#pragma unroll
      for (int ng = 0; ng < kGroups; ++ng) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int col = ng * 8 + 2 * t + h;
          if (col >= it.rows) continue;
          float amax = s_amax[col];
#pragma unroll
          for (int w = 1; w < kComputeMathWarps; ++w) amax = fmaxf(amax, s_amax[w * kTileN + col]);
          const u32 code = mx_e4m3_scale_code(amax);
          const u32 q = float2_to_e4m3x2(a[ng][h] * exact_pow2(127 - int(code)), 0.0f) & 0xFFu;
          Atom::template store_handoff<kInter>(ws, it.base + col, i, q, code, warp == 0 && g == 0);
        }
      }
      __threadfence();
      fence_proxy_async_global();
      named_barrier_sync(1, 32 * kComputeMathWarps);
      if (threadIdx.x == 0) red_release_gpu_add(ws.l1_done + it.active, 1);
    } else {
      const int h_row = it.m_tile * 64 + warp * 16 + g;
#pragma unroll
      for (int ng = 0; ng < kGroups; ++ng) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int col = ng * 8 + 2 * t + h;
          if (col >= it.rows) continue;
          u16* out = ws.arena + u64(ws.route_slot[it.base + col]) * kHidden;
          out[h_row] = float_to_bf16_rne(acc[ng][h]);
          out[h_row + 8] = float_to_bf16_rne(acc[ng][2 + h]);
        }
      }
    }
  }
  // The finalize role may launch once every CTA is past its items (it still
  // waits for this grid's completion). Earlier, its CTAs would sit on the SMs
  // through the whole mainloop: measured 1-4% slower at B = 256.
  griddep_launch_dependents();
}

template <int kHidden, int kInter, int kTopK, int kTileN, int kStages>
__device__ void moe_compute_sm90_entry(const void* w1_map, const void* w2_map, const u32* w1_scales,
                                       const u32* w2_scales, const float* topk_weights, float clamp,
                                       MOEJIT_WORKSPACE_FORMALS) {
  moe_compute<kHidden, kInter, kTopK, kTileN, kStages, AtomSm90>(w1_map, w2_map, w1_scales, w2_scales, topk_weights,
                                                                 clamp, MOEJIT_WORKSPACE_STRUCT);
}

#if defined(__CUDA_ARCH_FEAT_SM120_ALL) || defined(__CUDA_ARCH_FEAT_SM121_ALL)
template <int kHidden, int kInter, int kTopK, int kTileN, int kStages>
__device__ void moe_compute_sm120_entry(const void* w1_map, const void* w2_map, const u32* w1_scales,
                                        const u32* w2_scales, const float* topk_weights, float clamp,
                                        MOEJIT_WORKSPACE_FORMALS) {
  moe_compute<kHidden, kInter, kTopK, kTileN, kStages, AtomSm120>(w1_map, w2_map, w1_scales, w2_scales, topk_weights,
                                                                  clamp, MOEJIT_WORKSPACE_STRUCT);
}
#endif

}  // namespace moejit
