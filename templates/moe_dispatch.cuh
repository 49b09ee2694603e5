#pragma once
// Role 1, dispatch (one GPU): sort the B*k routes by expert, build the
// active-expert queue and the compute role's item schedule, and turn each
// token's MXFP8 activation row into its exact BF16 image once (the sm_90a MMA
// consumes BF16), reused by all k of its routes (the front reorder of the PTO
// notes). Block 0 routes; the other blocks convert activations.

#include "moe_ptx.cuh"
#include "moe_workspace.cuh"

namespace moejit {

// Exclusive prefix sum of data[0..n) in place by one block; returns the total.
// Each thread owns a contiguous run; run totals are scanned with warp shuffles.
template <int kThreads>
__device__ int block_exclusive_scan(int* data, int n, int* s_partials) {
  static_assert(kThreads % 32 == 0 && kThreads <= 1024, "one warp scans the warp totals");
  const int per_thread = (n + kThreads - 1) / kThreads;
  const int begin = threadIdx.x * per_thread;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  int local = 0;
  for (int i = begin; i < begin + per_thread && i < n; ++i) local += data[i];
  int inclusive = local;
#pragma unroll
  for (int d = 1; d < 32; d *= 2) {
    const int v = __shfl_up_sync(0xFFFFFFFFu, inclusive, d);
    if (lane >= d) inclusive += v;
  }
  if (lane == 31) s_partials[warp] = inclusive;
  __syncthreads();
  if (warp == 0) {
    int w = lane < kThreads / 32 ? s_partials[lane] : 0;
#pragma unroll
    for (int d = 1; d < 32; d *= 2) {
      const int v = __shfl_up_sync(0xFFFFFFFFu, w, d);
      if (lane >= d) w += v;
    }
    if (lane < kThreads / 32) s_partials[lane] = w;  // inclusive warp prefix
  }
  __syncthreads();
  int running = inclusive - local + (warp > 0 ? s_partials[warp - 1] : 0);
  for (int i = begin; i < begin + per_thread && i < n; ++i) {
    const int v = data[i];
    data[i] = running;
    running += v;
  }
  const int total = s_partials[kThreads / 32 - 1];
  __syncthreads();
  return total;
}

template <int kExperts, int kTopK, int kTileN, int kTiles1, int kTiles2, int kThreads>
__device__ void moe_route(const MoeWorkspace& ws, const i32* __restrict__ topk_ids, u32 tokens) {
  __shared__ int s_count[kExperts];
  __shared__ int s_base[kExperts];
  __shared__ int s_active[kExperts];  // active index of each expert
  __shared__ int s_items1[kExperts];  // indexed by active index
  __shared__ int s_items2[kExperts];
  __shared__ int s_partials[kThreads + 1];
  const int routes = int(tokens) * kTopK;

  for (int e = threadIdx.x; e < kExperts; e += kThreads) s_count[e] = 0;
  for (int t = threadIdx.x; t < int(tokens); t += kThreads) ws.token_poison[t] = 0;
  __syncthreads();
  for (int r = threadIdx.x; r < routes; r += kThreads) {
    const int id = topk_ids[r];
    // An id outside [0, E) has no slot: its token is poisoned, never aliased.
    if (unsigned(id) < unsigned(kExperts)) atomicAdd(&s_count[id], 1);
  }
  __syncthreads();
  for (int r = threadIdx.x; r < routes; r += kThreads)
    if (unsigned(topk_ids[r]) >= unsigned(kExperts)) ws.token_poison[r / kTopK] = 1;
  for (int e = threadIdx.x; e < kExperts; e += kThreads) {
    s_base[e] = s_count[e];
    s_active[e] = s_count[e] > 0 ? 1 : 0;
  }
  __syncthreads();
  block_exclusive_scan<kThreads>(s_base, kExperts, s_partials);
  const int n_active = block_exclusive_scan<kThreads>(s_active, kExperts, s_partials);

  for (int e = threadIdx.x; e < kExperts; e += kThreads) {
    if (s_count[e] == 0) continue;
    const int a = s_active[e];
    const int token_tiles = (s_count[e] + kTileN - 1) / kTileN;
    ws.active_expert[a] = e;
    ws.active_rows[a] = s_count[e];
    ws.active_base[a] = s_base[e];
    // l1_done is never reset: the previous forward's compute role has
    // finished (stream order), so its value is stable here.
    ws.l1_target[a] = ws.l1_done[a] + token_tiles * kTiles1;
    s_items1[a] = token_tiles * kTiles1;
    s_items2[a] = token_tiles * kTiles2;
  }
  __syncthreads();
  // Expert-sorted route list (s_base becomes the fill cursor). Order within an
  // expert does not matter: every token column of the MMA is independent.
  for (int r = threadIdx.x; r < routes; r += kThreads) {
    const int id = topk_ids[r];
    if (unsigned(id) < unsigned(kExperts)) ws.route_slot[atomicAdd(&s_base[id], 1)] = r;
  }
  // GEMM1 items come first (active-expert major), then all GEMM2 items: a
  // GEMM2 item only ever waits for GEMM1 items earlier in the order.
  const int items1 = block_exclusive_scan<kThreads>(s_items1, n_active, s_partials);
  const int items2 = block_exclusive_scan<kThreads>(s_items2, n_active, s_partials);
  for (int a = threadIdx.x; a < n_active; a += kThreads) {
    ws.item_begin1[a] = s_items1[a];
    ws.item_begin2[a] = items1 + s_items2[a];
  }
  if (threadIdx.x == 0) {
    ws.header->n_active = n_active;
    ws.header->items1 = items1;
    ws.header->items2 = items2;
    ws.header->epoch = ws.header->epoch + 1;
    ws.item_begin1[n_active] = items1;
    ws.item_begin2[n_active] = items1 + items2;
  }
}

// Each token's activation row as the compute atom stages it: the BF16 image
// of its MXFP8 values (sm_90a), or its E4M3 bytes and scale words copied into
// the workspace (kFp8Rows, sm_120a). 16 elements per thread.
template <int kHidden, int kFp8Rows>
__device__ void moe_activation_rows(const MoeWorkspace& ws, const u8* __restrict__ x_q,
                                    const u32* __restrict__ x_scales, u32 tokens, u32 first_block) {
  const u32 chunks = tokens * (kHidden / 16);
  for (u32 c = (blockIdx.x - first_block) * blockDim.x + threadIdx.x; c < chunks;
       c += (gridDim.x - first_block) * blockDim.x) {
    const u32 token = c / (kHidden / 16), k = (c % (kHidden / 16)) * 16;
    const uint4 q = *reinterpret_cast<const uint4*>(x_q + u64(token) * kHidden + k);
    if (kFp8Rows) {
      *reinterpret_cast<uint4*>(ws.x_q + u64(token) * kHidden + k) = q;
      if (k % 128 == 0)
        ws.x_scales[u64(token) * (kHidden / 128) + k / 128] = x_scales[u64(token) * (kHidden / 128) + k / 128];
      continue;
    }
    const u32 code = (x_scales[u64(token) * (kHidden / 128) + k / 128] >> (8 * ((k / 32) % 4))) & 0xFFu;
    const u32 words[4] = {q.x, q.y, q.z, q.w};
    u32 out[8];
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const u32 w = words[i / 2] >> (16 * (i % 2));
      out[i] = u32(mxfp8_to_bf16(w & 0xFFu, code)) | (u32(mxfp8_to_bf16((w >> 8) & 0xFFu, code)) << 16);
    }
    uint4* dst = reinterpret_cast<uint4*>(ws.x_bf16 + u64(token) * kHidden + k);
    dst[0] = make_uint4(out[0], out[1], out[2], out[3]);
    dst[1] = make_uint4(out[4], out[5], out[6], out[7]);
  }
}

// BF16 activations -> MXFP8 (OCP MX rule) and its BF16 image: one thread per
// 32-element block, so the block amax never leaves the thread.
template <int kHidden>
__device__ void moe_quantize_rows(const MoeWorkspace& ws, const u16* __restrict__ x, u32 tokens, u32 first_block) {
  const u32 blocks = tokens * (kHidden / 32);
  for (u32 b = (blockIdx.x - first_block) * blockDim.x + threadIdx.x; b < blocks;
       b += (gridDim.x - first_block) * blockDim.x) {
    const u32 token = b / (kHidden / 32), k = (b % (kHidden / 32)) * 32;
    const uint4* src = reinterpret_cast<const uint4*>(x + u64(token) * kHidden + k);
    u32 w[16];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const uint4 v = src[i];
      w[4 * i] = v.x, w[4 * i + 1] = v.y, w[4 * i + 2] = v.z, w[4 * i + 3] = v.w;
    }
    float amax = 0.0f;
#pragma unroll
    for (int i = 0; i < 16; ++i)
      amax = fmaxf(amax, fmaxf(fabsf(bf16_to_float(w[i] & 0xFFFFu)), fabsf(bf16_to_float(w[i] >> 16))));
    const u32 code = mx_e4m3_scale_code(amax);
    const float inv_scale = exact_pow2(127 - int(code));
    u32 q[8], img[16];
#pragma unroll
    for (int i = 0; i < 16; ++i) {
      const u32 pair =
          float2_to_e4m3x2(bf16_to_float(w[i] & 0xFFFFu) * inv_scale, bf16_to_float(w[i] >> 16) * inv_scale);
      q[i / 2] = (i % 2) ? (q[i / 2] | (pair << 16)) : pair;
      img[i] = u32(mxfp8_to_bf16(pair & 0xFFu, code)) | (u32(mxfp8_to_bf16(pair >> 8, code)) << 16);
    }
    uint4* qdst = reinterpret_cast<uint4*>(ws.x_q + u64(token) * kHidden + k);
    qdst[0] = make_uint4(q[0], q[1], q[2], q[3]);
    qdst[1] = make_uint4(q[4], q[5], q[6], q[7]);
    reinterpret_cast<u8*>(ws.x_scales)[u64(token) * (kHidden / 32) + k / 32] = u8(code);
    uint4* dst = reinterpret_cast<uint4*>(ws.x_bf16 + u64(token) * kHidden + k);
#pragma unroll
    for (int i = 0; i < 4; ++i) dst[i] = make_uint4(img[4 * i], img[4 * i + 1], img[4 * i + 2], img[4 * i + 3]);
  }
}

// The dispatch role. Block 0 routes; the rest prepare activation rows (block 0
// does both when the grid has one block). kInputBf16 selects BF16 `x_bf16_in`
// (quantized here) over pre-quantized `x_q_in` + `x_scales_in`.
template <int kExperts, int kTopK, int kHidden, int kTileN, int kTiles1, int kTiles2, int kThreads, int kInputBf16,
          int kFp8Rows>
__device__ void moe_dispatch(const i32* __restrict__ topk_ids, const u8* __restrict__ x_q_in,
                             const u32* __restrict__ x_scales_in, const u16* __restrict__ x_bf16_in, u32 tokens,
                             const MoeWorkspace& ws) {
  // The compute role may launch now: its CTAs set up their barriers and
  // prefetch descriptors while this grid runs, then wait for it to complete.
  griddep_launch_dependents();
  if (blockIdx.x == 0) {
    moe_route<kExperts, kTopK, kTileN, kTiles1, kTiles2, kThreads>(ws, topk_ids, tokens);
    if (gridDim.x > 1) return;
    __syncthreads();
  }
  const u32 first_block = gridDim.x > 1 ? 1u : 0u;
  if (kInputBf16)
    moe_quantize_rows<kHidden>(ws, x_bf16_in, tokens, first_block);
  else
    moe_activation_rows<kHidden, kFp8Rows>(ws, x_q_in, x_scales_in, tokens, first_block);
}

template <int kExperts, int kTopK, int kHidden, int kTileN, int kTiles1, int kTiles2, int kThreads, int kInputBf16,
          int kFp8Rows>
__device__ void moe_dispatch_entry(const i32* topk_ids, const u8* x_q_in, const u32* x_scales_in, const u16* x_bf16_in,
                                   u32 tokens, MOEJIT_WORKSPACE_FORMALS) {
  moe_dispatch<kExperts, kTopK, kHidden, kTileN, kTiles1, kTiles2, kThreads, kInputBf16, kFp8Rows>(
      topk_ids, x_q_in, x_scales_in, x_bf16_in, tokens, MOEJIT_WORKSPACE_STRUCT);
}

}  // namespace moejit
