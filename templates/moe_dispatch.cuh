#pragma once
// Role 1, dispatch (one GPU): prepares the GEMM1 activation rows when the
// compute role cannot read the caller's x directly. BF16 x is quantized to
// MXFP8 (the OCP MX rule) into the workspace; the exact path also needs each
// row's BF16 image (its MMA consumes BF16), and the fast path each row split
// into its large and small elements (contract::path_split_rows), made once per
// token and reused by all k of its routes (the front reorder of the PTO notes). Routing is not
// done here: every compute CTA derives it from topk_ids (moe_schedule.cuh).

#include "moe_contract.cuh"
#include "moe_ep.cuh"
#include "moe_ptx.cuh"

namespace moejit {

// The rows the compute role reads have the kernels' padded width kHidden; the
// caller's have the model's H = kHiddenIn (a multiple of 32). Every function
// below writes zeros (codes, scale codes, BF16) past kHiddenIn.

// The split of an E4M3 word (4 codes) into its large elements (magnitude code
// >= contract::kSplitCode) and its small ones; each code lands in exactly one.
__device__ __forceinline__ void split_e4m3x4(u32 codes, u32& large, u32& small) {
  const u32 is_large = __vcmpgeu4(codes & 0x7F7F7F7Fu, contract::kSplitCode * 0x01010101u);
  large = codes & is_large;
  small = codes & ~is_large;
}
// 16 E4M3 codes into the GEMM1 rows: as they are, or split (kSplit) into x_q and x_small.
template <int kSplit>
__device__ __forceinline__ void store_codes(u8* x_q, u8* x_small, u64 offset, uint4 q) {
  if (kSplit) {
    uint4 l, m;
    split_e4m3x4(q.x, l.x, m.x);
    split_e4m3x4(q.y, l.y, m.y);
    split_e4m3x4(q.z, l.z, m.z);
    split_e4m3x4(q.w, l.w, m.w);
    *reinterpret_cast<uint4*>(x_small + offset) = m;
    q = l;
  }
  *reinterpret_cast<uint4*>(x_q + offset) = q;
}

// Where a scale byte of x also goes: nowhere (kOn = 0), or with kEpMirror into
// every rank's mirror (ep_scales), in this rank's span (bytes [Bcap][H/32]).
template <int kOn, int kRanks, long long kMirror, long long kSpanBytes>
struct ScaleMirror {
  const contract::MoeHeader* h;
  __device__ void operator()(u64 index, u8 code) const {
    if constexpr (kOn != 0)
      for (int d = 0; d < kRanks; ++d)
        (reinterpret_cast<u8*>(h->peers[d]) + kMirror + h->rank * kSpanBytes)[index] = code;
  }
};

// Pre-quantized rows -> the GEMM1 rows (split and/or padded) and their scale
// bytes: one thread per 32-element block.
template <int kHidden, int kHiddenIn, int kSplit, class Mirror>
__device__ void moe_stage_codes(u8* __restrict__ x_q, u8* __restrict__ x_small, u8* __restrict__ x_scales,
                                const u8* __restrict__ x_q_in, const u8* __restrict__ x_scales_in, u32 tokens,
                                Mirror mirror) {
  const u32 blocks = tokens * (kHidden / 32);
  for (u32 b = blockIdx.x * blockDim.x + threadIdx.x; b < blocks; b += gridDim.x * blockDim.x) {
    const u32 token = b / (kHidden / 32), k = (b % (kHidden / 32)) * 32;
    const bool real = k < kHiddenIn;
    const uint4* src = reinterpret_cast<const uint4*>(x_q_in + u64(token) * kHiddenIn + k);
    const u64 offset = u64(token) * kHidden + k;
    store_codes<kSplit>(x_q, x_small, offset, real ? src[0] : make_uint4(0, 0, 0, 0));
    store_codes<kSplit>(x_q, x_small, offset + 16, real ? src[1] : make_uint4(0, 0, 0, 0));
    const u8 code = real ? x_scales_in[u64(token) * (kHiddenIn / 32) + k / 32] : 0;
    x_scales[u64(token) * (kHidden / 32) + k / 32] = code;
    mirror(u64(token) * (kHidden / 32) + k / 32, code);
  }
}

// The BF16 image of pre-quantized rows: 16 elements per thread.
template <int kHidden, int kHiddenIn>
__device__ void moe_bf16_image(u16* __restrict__ x_bf16, const u8* __restrict__ x_q, const u8* __restrict__ x_scales,
                               u32 tokens) {
  const u32 chunks = tokens * (kHidden / 16);
  for (u32 c = blockIdx.x * blockDim.x + threadIdx.x; c < chunks; c += gridDim.x * blockDim.x) {
    const u32 token = c / (kHidden / 16), k = (c % (kHidden / 16)) * 16;
    u32 out[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    if (k < kHiddenIn) {
      const uint4 q = *reinterpret_cast<const uint4*>(x_q + u64(token) * kHiddenIn + k);
      const u32 code = x_scales[u64(token) * (kHiddenIn / 32) + k / 32];
      const u32 words[4] = {q.x, q.y, q.z, q.w};
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        const u32 w = words[i / 2] >> (16 * (i % 2));
        out[i] = u32(mxfp8_to_bf16(w & 0xFFu, code)) | (u32(mxfp8_to_bf16((w >> 8) & 0xFFu, code)) << 16);
      }
    }
    uint4* dst = reinterpret_cast<uint4*>(x_bf16 + u64(token) * kHidden + k);
    dst[0] = make_uint4(out[0], out[1], out[2], out[3]);
    dst[1] = make_uint4(out[4], out[5], out[6], out[7]);
  }
}

// The caller's BF16 rows, padded (W4A16 reads them as they are): 8 elements per thread.
template <int kHidden, int kHiddenIn>
__device__ void moe_pad_bf16_rows(u16* __restrict__ x_bf16, const u16* __restrict__ x, u32 tokens) {
  const u32 chunks = tokens * (kHidden / 8);
  for (u32 c = blockIdx.x * blockDim.x + threadIdx.x; c < chunks; c += gridDim.x * blockDim.x) {
    const u32 token = c / (kHidden / 8), k = (c % (kHidden / 8)) * 8;
    *reinterpret_cast<uint4*>(x_bf16 + u64(token) * kHidden + k) =
        k < kHiddenIn ? *reinterpret_cast<const uint4*>(x + u64(token) * kHiddenIn + k) : make_uint4(0, 0, 0, 0);
  }
}

// A 32-element block of BF16 row elements, as 16 words of two.
__device__ __forceinline__ void load_bf16_block(const u16* src, u32 (&w)[16]) {
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const uint4 v = reinterpret_cast<const uint4*>(src)[i];
    w[4 * i] = v.x, w[4 * i + 1] = v.y, w[4 * i + 2] = v.z, w[4 * i + 3] = v.w;
  }
}
__device__ __forceinline__ float bf16_block_amax(const u32 (&w)[16]) {
  float amax = 0.0f;
#pragma unroll
  for (int i = 0; i < 16; ++i)
    amax = fmaxf(amax, fmaxf(fabsf(bf16_to_float(w[i] & 0xFFFFu)), fabsf(bf16_to_float(w[i] >> 16))));
  return amax;
}
// Its E4M3 codes at the block's scale code (RNE, saturating), two elements a half word.
__device__ __forceinline__ void e4m3_block(const u32 (&w)[16], u32 code, u32 (&q)[8]) {
  const float inv_scale = exact_pow2(127 - int(code));
#pragma unroll
  for (int i = 0; i < 16; ++i) {
    const u32 pair = float2_to_e4m3x2(bf16_to_float(w[i] & 0xFFFFu) * inv_scale, bf16_to_float(w[i] >> 16) * inv_scale);
    q[i / 2] = (i % 2) ? (q[i / 2] | (pair << 16)) : pair;
  }
}

// The token frame (MoeLaunchPlan::token_frame): each token's row in one scale
// frame, the largest of its blocks' MX scale codes, so GEMM1's promotion has
// no activation scale to multiply in (AtomSm90Fp8's kFrame; the GEMM1
// epilogue multiplies the frame in once). A block's MX codes are shifted down
// by its code's distance to the frame: exact while a code stays an E4M3
// normal, rounded to nearest even on the E4M3 subnormal grid below that
// (docs/numerics.md); then split as ever. Every scale byte of the row is the
// frame's. One CTA a token: the frame is the row's maximum, over the blocks
// that hold a nonzero element (a caller's all-zero block may carry any code).
// BF16 x gives MX-normalized blocks; a caller's x_q that is not stays correct,
// only less precise, as on the MX blocks.
__device__ __forceinline__ void shift_codes(u32 (&q)[8], u32 delta) {
  if (delta == 0u) return;
  // 448 * 2^-20 is below half the smallest subnormal (2^-10): further shifts round to zero as well.
  const float f = exact_pow2(-int(delta < 20u ? delta : 20u));
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const u32 c = q[i];
    const u32 lo = float2_to_e4m3x2(e4m3_to_float(c & 0xFFu) * f, e4m3_to_float((c >> 8) & 0xFFu) * f);
    const u32 hi = float2_to_e4m3x2(e4m3_to_float((c >> 16) & 0xFFu) * f, e4m3_to_float(c >> 24) * f);
    q[i] = lo | (hi << 16);
  }
}
template <int kHidden, int kHiddenIn, int kInputBf16, int kThreads, class Mirror>
__device__ void moe_frame_rows(u8* __restrict__ x_q, u8* __restrict__ x_small, u8* __restrict__ x_scales,
                               const u16* __restrict__ x, const u8* __restrict__ x_q_in,
                               const u8* __restrict__ x_scales_in, u32 tokens, Mirror mirror) {
  constexpr u32 kBlocks = kHidden / 32, kBlocksIn = kHiddenIn / 32;
  // A thread's block stays in registers across the frame's barrier, so each is read once.
  static_assert(kBlocks <= kThreads, "one block a thread (H <= 8192 at 256 threads): widen the dispatch CTA");
  __shared__ u32 s_frame;
  const u32 kb = threadIdx.x;
  for (u32 token = blockIdx.x; token < tokens; token += gridDim.x) {
    if (threadIdx.x == 0) s_frame = 0u;
    __syncthreads();
    u32 q[8] = {0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u}, code = 0u, top = 0u;
    if (kb < kBlocksIn) {
      if constexpr (kInputBf16 != 0) {
        u32 w[16];
        load_bf16_block(x + u64(token) * kHiddenIn + kb * 32, w);
        code = mx_e4m3_scale_code(bf16_block_amax(w));
        e4m3_block(w, code, q);
      } else {
        const uint4* src = reinterpret_cast<const uint4*>(x_q_in + u64(token) * kHiddenIn + kb * 32);
        const uint4 a = src[0], b = src[1];
        q[0] = a.x, q[1] = a.y, q[2] = a.z, q[3] = a.w, q[4] = b.x, q[5] = b.y, q[6] = b.z, q[7] = b.w;
        code = x_scales_in[u64(token) * kBlocksIn + kb];
      }
      u32 any = 0u;
#pragma unroll
      for (int i = 0; i < 8; ++i) any |= q[i] & 0x7F7F7F7Fu;
      // A zero block's codes stay zeros (signs too) at any shift, so a caller's may carry a code above the frame.
      if (any) top = code;
    }
    if (top) atomicMax(&s_frame, top);
    __syncthreads();
    const u32 frame = s_frame;
    if (kb < kBlocks) {
      shift_codes(q, frame - code);
      const u64 offset = u64(token) * kHidden + kb * 32;
      store_codes<1>(x_q, x_small, offset, make_uint4(q[0], q[1], q[2], q[3]));
      store_codes<1>(x_q, x_small, offset + 16, make_uint4(q[4], q[5], q[6], q[7]));
      x_scales[u64(token) * kBlocks + kb] = u8(frame);
      mirror(u64(token) * kBlocks + kb, u8(frame));
    }
    __syncthreads();  // every thread has read s_frame before the next token's reset
  }
}

// BF16 activations -> MXFP8 (and, with kImage, its BF16 image; with kSplit,
// split rows): one thread per 32-element block, so the block amax never
// leaves the thread.
template <int kHidden, int kHiddenIn, int kImage, int kSplit, class Mirror>
__device__ void moe_quantize_rows(u8* __restrict__ x_q, u8* __restrict__ x_small, u8* __restrict__ x_scales,
                                  u16* __restrict__ x_bf16, const u16* __restrict__ x, u32 tokens, Mirror mirror) {
  const u32 blocks = tokens * (kHidden / 32);
  for (u32 b = blockIdx.x * blockDim.x + threadIdx.x; b < blocks; b += gridDim.x * blockDim.x) {
    const u32 token = b / (kHidden / 32), k = (b % (kHidden / 32)) * 32;
    u32 w[16];
    if (k < kHiddenIn) {
      load_bf16_block(x + u64(token) * kHiddenIn + k, w);
    } else {
#pragma unroll
      for (int i = 0; i < 16; ++i) w[i] = 0;
    }
    const u32 code = k < kHiddenIn ? mx_e4m3_scale_code(bf16_block_amax(w)) : 0u;
    u32 q[8], img[16];
    e4m3_block(w, code, q);
#pragma unroll
    for (int i = 0; i < 16; ++i) {
      const u32 pair = (q[i / 2] >> (16 * (i % 2))) & 0xFFFFu;
      img[i] = u32(mxfp8_to_bf16(pair & 0xFFu, code)) | (u32(mxfp8_to_bf16(pair >> 8, code)) << 16);
    }
    const u64 offset = u64(token) * kHidden + k;
    store_codes<kSplit>(x_q, x_small, offset, make_uint4(q[0], q[1], q[2], q[3]));
    store_codes<kSplit>(x_q, x_small, offset + 16, make_uint4(q[4], q[5], q[6], q[7]));
    x_scales[u64(token) * (kHidden / 32) + k / 32] = u8(code);
    mirror(u64(token) * (kHidden / 32) + k / 32, u8(code));
    if (kImage) {
      uint4* dst = reinterpret_cast<uint4*>(x_bf16 + offset);
#pragma unroll
      for (int i = 0; i < 4; ++i) dst[i] = make_uint4(img[4 * i], img[4 * i + 1], img[4 * i + 2], img[4 * i + 3]);
    }
  }
}

// kEpPull: after publishing, wait for every rank's dispatch of this forward,
// then bring what this rank's compute role reads into this workspace: every
// rank's token count, routes and route weights (ep_tokens, ep_ids,
// ep_weights), and, once per (rank, token) that reaches one of this rank's
// experts, the token's GEMM1 rows from the owner (ep_rows, as the owner holds
// them). A token routed to several of them is read over the link once, not
// once per route (the pull cache of GC-MoE §4.5, by token). `pulled` releases
// it to the compute role; after a wait that gave up, with nothing pulled.
template <class Layout, int kExperts, int kTopK, int kCapacity, int kRanks>
__device__ void ep_pull(u8* ws, int tag) {
  constexpr contract::WorkspaceLayout l = Layout::kWs;
  constexpr int kHidden = Layout::kHiddenDim;
  constexpr int kSpan = kCapacity * kTopK;
  auto* h = reinterpret_cast<contract::MoeHeader*>(ws + l.header);
  __shared__ int s_tokens[kRanks];
  __shared__ int s_ok;
  if (threadIdx.x == 0) {
    bool ok = h->ranks == kRanks;  // else no peer table of this many ranks to read
    if (!ok) ep_fail(h, contract::kEpWaitSetup, h->rank, h->ranks, false);
    const u64 start = globaltimer();
    for (int s = 0; s < kRanks && ok; ++s) {
      const auto* peer = reinterpret_cast<const contract::MoeHeader*>(h->peers[s] + l.header);
      ok = ep_wait(h, start, contract::kEpWaitDispatch, s,
                   [&](int& seen) { return ep_counter(&peer->dispatched, tag, seen); });
    }
    s_ok = ok;
  }
  __syncthreads();
  const int rank = h->rank;
  if (s_ok) {
    for (int s = threadIdx.x; s < kRanks; s += blockDim.x) {
      s_tokens[s] = reinterpret_cast<const contract::MoeHeader*>(h->peers[s] + l.header)->tokens;
      if (blockIdx.x == 0) reinterpret_cast<i32*>(ws + l.ep_tokens)[s] = s_tokens[s];
    }
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < kRanks * kSpan; i += gridDim.x * blockDim.x) {
      const int s = i / kSpan, r = i % kSpan;
      if (r >= s_tokens[s] * kTopK) continue;
      const u8* peer = reinterpret_cast<const u8*>(h->peers[s]);
      reinterpret_cast<i32*>(ws + l.ep_ids)[i] = reinterpret_cast<const i32*>(peer + l.route_ids)[r];
      reinterpret_cast<float*>(ws + l.ep_weights)[i] = reinterpret_cast<const float*>(peer + l.route_weights)[r];
    }
    const int lane = threadIdx.x % 32, warps = gridDim.x * blockDim.x / 32;
    for (int item = (blockIdx.x * blockDim.x + threadIdx.x) / 32; item < kRanks * kCapacity; item += warps) {
      const int s = item / kCapacity, t = item % kCapacity;
      if (s == rank || t >= s_tokens[s]) continue;  // this rank's own rows are read in place
      const u8* peer = reinterpret_cast<const u8*>(h->peers[s]);
      const int id = lane < kTopK ? reinterpret_cast<const i32*>(peer + l.route_ids)[t * kTopK + lane] : -1;
      if (!__any_sync(0xFFFFFFFFu, unsigned(id - rank * kExperts) < unsigned(kExperts))) continue;
      // The regions the compute role reads a token's GEMM1 operands from, `bytes` a token.
      auto copy = [&](long long at, int bytes) {
        const u8* src = peer + at + (long long)t * bytes;
        u8* dst = pulled_rows<Layout>(ws, s, at) + (long long)t * bytes;
        if (bytes % 16 == 0) {  // four 16-byte loads in flight per lane
          for (int c = lane; c < bytes / 16; c += 4 * 32) {
            uint4 v[4];
#pragma unroll
            for (int u = 0; u < 4; ++u)
              if (c + 32 * u < bytes / 16) v[u] = reinterpret_cast<const uint4*>(src)[c + 32 * u];
#pragma unroll
            for (int u = 0; u < 4; ++u)
              if (c + 32 * u < bytes / 16) reinterpret_cast<uint4*>(dst)[c + 32 * u] = v[u];
          }
        } else {
          for (int c = lane; c < bytes / 4; c += 32)
            reinterpret_cast<u32*>(dst)[c] = reinterpret_cast<const u32*>(src)[c];
        }
      };
      if constexpr (contract::path_fp8_rows(Layout::kRowsPath)) {
        copy(l.x_q, kHidden);
        copy(l.x_scales, kHidden / 32);
        if constexpr (contract::path_split_rows(Layout::kRowsPath)) copy(l.x_small, kHidden);
      } else {
        copy(l.x_bf16, 2 * kHidden);
      }
    }
  }
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0 && atomicAdd(&h->pull_done, 1) == int(gridDim.x) - 1) {
    h->pull_done = 0;
    __threadfence();
    st_release_gpu(&h->pulled, tag);
  }
}

// kInputBf16: x arrives as BF16 (`x_bf16_in`), else pre-quantized (`x_q_in`,
// `x_scales_in`, UE8M0 bytes [B][H/32]). kQuantize: the w4a8-mx recipe (else
// W4A16, whose BF16 rows are only padded). kImage: write the BF16 image (the
// exact path). kRanks > 1: the rows, routes and token count are published to
// the other ranks' compute roles (moe_ep.cuh), the last CTA's release last;
// kEp (contract::EpMode) adds the mirror pushes or the pulls.
template <int kExperts, int kTopK, int kHidden, int kInter, int kCapacity, int kPath, int kShared, int kHiddenIn,
          int kInputBf16, int kQuantize, int kImage, int kRanks, int kEp, int kFrame, int kThreads>
__device__ void moe_dispatch(const u8* x_q_in, const u8* x_scales_in, const u16* x_bf16_in, const i32* topk_ids,
                             const float* topk_weights, u32 tokens, u8* ws) {
  // The compute role may launch now: its weight stream needs nothing from this grid.
  griddep_launch_dependents();
  using Layout = EpLayout<kExperts, kTopK, kHidden, kInter, kCapacity, kPath, kShared, kRanks, kEp>;
  constexpr contract::WorkspaceLayout l = Layout::kWs;
  constexpr bool kSplit = contract::path_split_rows(kPath);
  constexpr bool kMirror = kRanks > 1 && (kEp & contract::kEpMirror);
  static_assert(kRanks > 1 || kEp == 0, "the EpMode bits are expert parallelism's");
  auto* h = reinterpret_cast<contract::MoeHeader*>(ws + l.header);
  // A mirror writes through the peer table, which must be one of kRanks ranks (the compute role reports it).
  const bool mirror = kMirror && h->ranks == kRanks;
  u8* x_q = ws + l.x_q;
  u8* x_scales = ws + l.x_scales;
  u16* x_bf16 = reinterpret_cast<u16*>(ws + l.x_bf16);
  if (!kQuantize) {
    moe_pad_bf16_rows<kHidden, kHiddenIn>(x_bf16, x_bf16_in, tokens);
  } else if (kImage && !kInputBf16) {
    moe_bf16_image<kHidden, kHiddenIn>(x_bf16, x_q_in, x_scales_in, tokens);
  } else {
    using Mirror = ScaleMirror<kMirror && !kImage, kRanks, l.ep_scales, (long long)kCapacity * (kHidden / 32)>;
    const Mirror to_peers{mirror ? h : nullptr};
    static_assert(!kFrame || (kSplit && !kImage), "the token frame is the split rows' (the fast path)");
    if constexpr (kFrame != 0)
      moe_frame_rows<kHidden, kHiddenIn, kInputBf16, kThreads>(x_q, ws + l.x_small, x_scales, x_bf16_in, x_q_in,
                                                               x_scales_in, tokens, to_peers);
    else if constexpr (kInputBf16 != 0)
      moe_quantize_rows<kHidden, kHiddenIn, kImage, kSplit>(x_q, ws + l.x_small, x_scales, x_bf16, x_bf16_in, tokens,
                                                            to_peers);
    else
      moe_stage_codes<kHidden, kHiddenIn, kSplit>(x_q, ws + l.x_small, x_scales, x_q_in, x_scales_in, tokens, to_peers);
  }
  if constexpr (kRanks > 1) {
    i32* ids = reinterpret_cast<i32*>(ws + l.route_ids);
    float* weights = reinterpret_cast<float*>(ws + l.route_weights);
    for (u32 r = blockIdx.x * blockDim.x + threadIdx.x; r < tokens * kTopK; r += gridDim.x * blockDim.x) {
      const i32 id = topk_ids[r];
      const float w = topk_weights[r];
      ids[r] = id, weights[r] = w;
      if (kMirror && mirror)
        for (int d = 0; d < kRanks; ++d) {
          u8* peer = reinterpret_cast<u8*>(h->peers[d]);
          const u64 at = u64(h->rank) * kCapacity * kTopK + r;
          reinterpret_cast<i32*>(peer + l.ep_ids)[at] = id;
          reinterpret_cast<float*>(peer + l.ep_weights)[at] = w;
        }
    }
    if (kMirror && mirror && blockIdx.x == 0)
      for (int d = threadIdx.x; d < kRanks; d += blockDim.x)
        reinterpret_cast<i32*>(h->peers[d] + l.ep_tokens)[h->rank] = int(tokens);
    __threadfence_system();
    __syncthreads();
    const int tag = h->epoch + 1;  // this rank's compute role bumps epoch to it
    if (threadIdx.x == 0) {
      if (atomicAdd(&h->dispatch_done, 1) == int(gridDim.x) - 1) {
        h->dispatch_done = 0;
        h->tokens = int(tokens);
        __threadfence_system();
        st_release_sys(&h->dispatched, tag);
      }
    }
    if constexpr ((kEp & contract::kEpPull) != 0) ep_pull<Layout, kExperts, kTopK, kCapacity, kRanks>(ws, tag);
  }
}

}  // namespace moejit
