#pragma once
// Role 3, finalize: y[t] = BF16(sum over j of the k BF16 route rows, in FP32,
// in slot order j = 0..k-1, then the fused shared expert's row (kShared)).
// A token with a route outside [0, E) has no row and becomes NaN: it never
// reads a neighbour's.

#include "moe_contract.cuh"
#include "moe_ep.cuh"
#include "moe_ptx.cuh"

namespace moejit {

// The arena's rows are kHidden (padded) wide; y's kHiddenIn (the model's H).
// With kRanks ranks (kExperts each), the rows come from every rank's compute
// role: this grid first waits until each has finished the forward (moe_ep.cuh).
// With kEpStagedReturns they stayed in the relay arena of the rank that
// computed them (the owner of the route's expert) and are read from there.
//
// With the unit schedule (contract::kScheduleUnits) a route's row is first the
// FP32 sum of its I/128 partial rows, in block order, rounded to BF16: block b
// is a token's 128 columns of y, warp j its route j (k routed, then the
// shared one), lane its 4 columns; warp 0 then adds the k rows as above.
template <int kExperts, int kTopK, int kHidden, int kInter, int kCapacity, int kPath, int kShared, int kHiddenIn,
          int kGrid>
__device__ void finalize_units(const i32* __restrict__ topk_ids, u16* __restrict__ y, u32 tokens, const u8* ws) {
  constexpr int kRoutes = kTopK + kShared, kKb2 = kInter / 128, kChunks = (kHiddenIn + 127) / 128;
  constexpr contract::MoeDims d{kExperts, kTopK, kHidden, kInter, kCapacity, kPath, kShared};
  static_assert(kHiddenIn % 4 == 0, "a lane's 4 columns");
  __shared__ float4 rows[kRoutes][32];
  const int j = threadIdx.x / 32, lane = threadIdx.x % 32;
  const u32 token = blockIdx.x / kChunks;
  const int h = (blockIdx.x % kChunks) * 128 + 4 * lane;
  bool poison = false;
  float4 sum = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  if (j < kTopK) poison = unsigned(topk_ids[u64(token) * kTopK + j]) >= unsigned(kExperts);
  if (!poison && h < kHiddenIn) {
    const u64 row = j < kTopK ? u64(token) * kTopK + j : u64(tokens) * kTopK + token;
    const float* part =
        reinterpret_cast<const float*>(ws + contract::partials_offset(d, kGrid)) + row * kKb2 * kHidden + h;
    float4 v[kKb2];
#pragma unroll
    for (int s = 0; s < kKb2; ++s) v[s] = __ldcg(reinterpret_cast<const float4*>(part + u64(s) * kHidden));
#pragma unroll
    for (int s = 0; s < kKb2; ++s) sum.x += v[s].x, sum.y += v[s].y, sum.z += v[s].z, sum.w += v[s].w;
  }
  auto bf16 = [](float v) { return bf16_to_float(float_to_bf16_rne(v)); };
  rows[j][lane] = make_float4(bf16(sum.x), bf16(sum.y), bf16(sum.z), bf16(sum.w));
  poison = __syncthreads_or(poison) != 0;
  if (j != 0 || h >= kHiddenIn) return;
  float4 t = rows[0][lane];
#pragma unroll
  for (int r = 1; r < kRoutes; ++r)
    t.x += rows[r][lane].x, t.y += rows[r][lane].y, t.z += rows[r][lane].z, t.w += rows[r][lane].w;
  auto pair = [&](float a, float b) {
    return poison ? 0x7FC07FC0u : u32(float_to_bf16_rne(a)) | u32(float_to_bf16_rne(b)) << 16;
  };
  const u32 lo = pair(t.x, t.y), hi = pair(t.z, t.w);
  *reinterpret_cast<uint2*>(y + u64(token) * kHiddenIn + h) = make_uint2(lo, hi);
}

// The end of a forward on the unit schedule, after the compute grid (griddepcontrol.wait): the GEMM2 readiness
// counters back to zero and the epoch advanced, so the next forward (stream-ordered after this grid) starts
// clean and tags its split-K flags anew. The other schedules' compute grid does it in its last CTA
// (moe_compute_run.cuh), where on the unit schedule the fences and atomic sat after the slowest CTA's last
// store: 2 us of a 50 us forward (H100, DSV4.1-Flash B = 1); here it runs beside the sums. (Moved for every
// schedule, it changed the allocation of the stream kernels, which sit at their 128-register cap, into 4-28 B
// of spills at B >= 8; there the tail was within the spread.)
template <int kExperts, int kTopK, int kHidden, int kInter, int kCapacity, int kPath, int kShared>
__device__ void end_forward(u8* ws) {
  constexpr contract::MoeDims d{kExperts, kTopK, kHidden, kInter, kCapacity, kPath, kShared};
  constexpr contract::WorkspaceLayout l = contract::workspace_layout(d);
  constexpr int kCounters = int(contract::ready_counters(d));
  int* const ready = reinterpret_cast<int*>(ws + l.ready);
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < kCounters; i += gridDim.x * blockDim.x) ready[i] = 0;
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    auto* h = reinterpret_cast<contract::MoeHeader*>(ws + l.header);
    h->epoch = h->epoch + 1;
  }
}

template <int kExperts, int kTopK, int kHidden, int kInter, int kCapacity, int kPath, int kShared, int kHiddenIn,
          int kRanks = 1, int kEp = 0, int kSchedule = 0, int kGrid = 0>
__device__ void moe_finalize(const i32* __restrict__ topk_ids, u16* __restrict__ y, u32 tokens, u8* ws) {
  griddep_wait();  // the arena rows are the compute role's
  if constexpr (kSchedule == contract::kScheduleUnits) {
    static_assert(kRanks == 1 && kPath == contract::kPathSm90Fp8, "the unit schedule: one GPU, the fast path");
    end_forward<kExperts, kTopK, kHidden, kInter, kCapacity, kPath, kShared>(ws);
    return finalize_units<kExperts, kTopK, kHidden, kInter, kCapacity, kPath, kShared, kHiddenIn, kGrid>(topk_ids, y,
                                                                                                         tokens, ws);
  }
  constexpr contract::MoeDims d{kExperts, kTopK, kHidden, kInter, kCapacity, kPath, kShared, kRanks, kEp};
  constexpr contract::WorkspaceLayout l = contract::workspace_layout(d);
  constexpr bool kStaged = kRanks > 1 && (kEp & contract::kEpStagedReturns);
  static_assert(kRanks > 1 || kEp == 0, "the EpMode bits are expert parallelism's");
  __shared__ const u16* s_relay[kStaged ? kRanks : 1];  // each rank's relay rows of this rank's routes
  if constexpr (kRanks > 1) {
    __shared__ int arrived;
    if (threadIdx.x == 0) {
      auto* own = reinterpret_cast<contract::MoeHeader*>(ws + l.header);
      const int forward = own->epoch;  // this rank's compute role has finished it (stream order)
      const u64 start = globaltimer();
      bool ok = own->ranks == kRanks;  // else no peer table of this many ranks to read
      if (!ok) ep_fail(own, contract::kEpWaitSetup, own->rank, own->ranks, false);
      for (int s = 0; s < kRanks && ok; ++s) {
        const auto* peer = reinterpret_cast<const contract::MoeHeader*>(own->peers[s] + l.header);
        ok = ep_wait(own, start, contract::kEpWaitCompute, s,
                     [&](int& seen) { return ep_counter(&peer->epoch, forward, seen); });
      }
      arrived = ok;
      if constexpr (kStaged)
        for (int s = 0; s < kRanks && ok; ++s)
          s_relay[s] = reinterpret_cast<const u16*>(own->peers[s] + l.ep_relay) +
                       (long long)own->rank * kCapacity * kTopK * kHidden;
    }
    __syncthreads();
    if (!arrived) return;  // the host reports the header's error; y stays as it was
  }
  const u16* arena = reinterpret_cast<const u16*>(ws + l.arena);
  const u32 chunks = tokens * (kHiddenIn / 8);
  for (u32 c = blockIdx.x * blockDim.x + threadIdx.x; c < chunks; c += gridDim.x * blockDim.x) {
    const u32 token = c / (kHiddenIn / 8), h = (c % (kHiddenIn / 8)) * 8;
    bool poison = false;
    float sum[8] = {0, 0, 0, 0, 0, 0, 0, 0};
#pragma unroll
    for (int j = 0; j < kTopK + kShared; ++j) {
      const u64 route = j < kTopK ? u64(token) * kTopK + j : u64(contract::shared_route0(d)) + token;
      const unsigned id = j < kTopK ? unsigned(topk_ids[route]) : 0u;
      if (j < kTopK) poison |= id >= unsigned(kExperts * kRanks);
      const u16* row = arena + route * kHidden;
      if constexpr (kStaged)
        if (id < unsigned(kExperts * kRanks)) row = s_relay[id / kExperts] + route * kHidden;
      const uint4 v = *reinterpret_cast<const uint4*>(row + h);
      const u32 words[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        sum[2 * i] += bf16_to_float(words[i] & 0xFFFFu);
        sum[2 * i + 1] += bf16_to_float(words[i] >> 16);
      }
    }
    u32 out[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const u32 lo = poison ? 0x7FC0u : float_to_bf16_rne(sum[2 * i]);
      const u32 hi = poison ? 0x7FC0u : float_to_bf16_rne(sum[2 * i + 1]);
      out[i] = lo | (hi << 16);
    }
    *reinterpret_cast<uint4*>(y + u64(token) * kHiddenIn + h) = make_uint4(out[0], out[1], out[2], out[3]);
  }
}

}  // namespace moejit
