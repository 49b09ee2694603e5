#pragma once
// The compute role's routing tables and route lists (moe_schedule.cuh derives the schedule from them), by
// every CTA from topk_ids alone:
//  - routes per expert, the active experts in expert order, and the token tiles of each
//    (ceil(count / tile_n)), with each phase's step-cost prefix where an atom's steps differ in cost; all CTAs
//    compute the same tables, so they agree on every index without talking (route_tables; route_tables_warp
//    for a decode step of at most 32 routes);
//  - the token columns of an item: the routes of its expert in route order (a stable sort), found with a warp
//    ballot scan (tile_routes).

#include "moe_contract.cuh"
#include "moe_ptx.cuh"

namespace moejit {

// Exclusive prefix sum of data[0..n) in place by one block; returns the total.
// Each thread owns a contiguous run; run totals are scanned with warp shuffles.
template <int kThreads>
__device__ unsigned block_exclusive_scan(unsigned* data, int n, unsigned* s_partials) {
  static_assert(kThreads % 32 == 0 && kThreads <= 1024, "one warp scans the warp totals");
  const int per_thread = (n + kThreads - 1) / kThreads;
  const int begin = threadIdx.x * per_thread;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  unsigned local = 0;
  for (int i = begin; i < begin + per_thread && i < n; ++i) local += data[i];
  unsigned inclusive = local;
#pragma unroll
  for (int d = 1; d < 32; d *= 2) {
    const unsigned v = __shfl_up_sync(0xFFFFFFFFu, inclusive, d);
    if (lane >= d) inclusive += v;
  }
  if (lane == 31) s_partials[warp] = inclusive;
  __syncthreads();
  if (warp == 0) {
    unsigned w = lane < kThreads / 32 ? s_partials[lane] : 0u;
#pragma unroll
    for (int d = 1; d < 32; d *= 2) {
      const unsigned v = __shfl_up_sync(0xFFFFFFFFu, w, d);
      if (lane >= d) w += v;
    }
    if (lane < kThreads / 32) s_partials[lane] = w;  // inclusive warp prefix
  }
  __syncthreads();
  unsigned running = inclusive - local + (warp > 0 ? s_partials[warp - 1] : 0u);
  for (int i = begin; i < begin + per_thread && i < n; ++i) {
    const unsigned v = data[i];
    data[i] = running;
    running += v;
  }
  const unsigned total = s_partials[kThreads / 32 - 1];
  __syncthreads();
  return total;
}

// The sum of v over the lanes below this one (all 32 lanes take part).
__device__ __forceinline__ int warp_exclusive_sum(int v) {
  int inclusive = v;
#pragma unroll
  for (int d = 1; d < 32; d *= 2) {
    const int u = __shfl_up_sync(0xFFFFFFFFu, inclusive, d);
    if (threadIdx.x % 32 >= unsigned(d)) inclusive += u;
  }
  return inclusive - v;
}

// The routes the schedule reads: kSpans runs of route indices, span s the
// `span_size(s)` routes from `span_begin(s)` in route order, route r reaching
// expert `expert(r)` (an id outside [0, E) reaches none). One GPU: one span,
// the caller's topk_ids as they are; expert parallelism: a span per rank, its
// tokens' routes (moe_ep.cuh, EpRoutes).
struct LocalRoutes {
  static constexpr int kSpans = 1;
  const i32* ids;
  int n;
  __device__ int span_begin(int) const { return 0; }
  __device__ int span_size(int) const { return n; }
  __device__ int expert(int r) const { return __ldg(ids + r); }
};

// The routing tables in shared memory (contract::ComputeSmemLayout).
struct RouteTables {
  int* active;  // [E]: expert of active index a
  int* count;   // [E]: routes of active index a
  int* tile0;   // [E + 1]: first token tile of active index a (prefix)
  int* cost0;   // [2][E + 1]: per phase, the step cost of the token tiles before active index a (prefix)
  int n_active;
  int tiles;  // token tiles over all active experts
};

// Whether an atom's steps all cost the same: then the shares split the step
// count by a formula, and no cost tables are built (contract::path_cost_weighted).
template <class Costs>
__host__ __device__ constexpr bool uniform_step_cost() {
  for (int p = 0; p < 2; ++p)
    for (int c = 0; c < 4; ++c)
      if (Costs::kStepCost[p][c] != Costs::kStepCost[0][0]) return false;
  return true;
}

// Costs::kStepCost[phase][class] (an atom's table), by a run-time class.
template <class Costs, int kPhase>
__device__ __forceinline__ int step_cost(int cls) {
  switch (cls) {
    case 0: return Costs::kStepCost[kPhase][0];
    case 1: return Costs::kStepCost[kPhase][1];
    case 2: return Costs::kStepCost[kPhase][2];
    default: return Costs::kStepCost[kPhase][3];
  }
}
// Step 1 for a decode step of at most 32 schedule routes (B * k plus, with
// kShared, one for the shared expert), by warp 0 while the block waits at one
// barrier: route_tables' active, count and tile0, and with kCosts (the stream
// schedule's weighted shares; UnitWalker reads no step costs) cost0, from one
// load per lane, a match per expert and warp scans, instead of ten block
// barriers and scans over E (the block's tables were done 2.5 us after entry at
// B = 1 on the H200, these 1.3). At most 32 routes make at most 32 active
// experts: a lane an active index. The caller checks routes.span_size(0) +
// kShared <= 32 (a lane a route). `scratch` is int [2]: the block reads
// n_active and the tile count from it.
template <int kExperts, int kShared, int kTileN, class Costs, bool kCosts, class Routes>
__device__ RouteTables route_tables_warp(const Routes& routes, int tokens, int* scratch, int* active, int* count,
                                         int* tile0, int* cost0) {
  constexpr int kRouted = kExperts - kShared;
  if (threadIdx.x < 32) {
    const int lane = threadIdx.x;
    const int id = lane < routes.span_size(0) ? routes.expert(routes.span_begin(0) + lane) : -1;
    const bool valid = unsigned(id) < unsigned(kRouted);  // an id outside [0, E) reaches no expert
    const unsigned peers = __match_any_sync(0xFFFFFFFFu, valid ? id : -1);
    const bool leader = valid && __ffs(peers) - 1 == lane;
    const unsigned leaders = __ballot_sync(0xFFFFFFFFu, leader);
    int rank = 0;  // the active index: experts in expert order
    for (int i = 0; i < 32; ++i) {
      const int other = __shfl_sync(0xFFFFFFFFu, id, i);
      rank += int((leaders >> i) & 1u) & int(other < id);
    }
    const int routed = __popc(leaders);
    if (leader) active[rank] = id, count[rank] = __popc(peers);
    const int n_active = routed + (kShared && tokens > 0 ? 1 : 0);
    if (kShared && tokens > 0 && lane == 0) active[routed] = kRouted, count[routed] = tokens;
    __syncwarp();
    const int c = lane < n_active ? count[lane] : 0;
    const int tiles = (c + kTileN - 1) / kTileN;
    const int tiles_before = warp_exclusive_sum(tiles);
    const int total = __shfl_sync(0xFFFFFFFFu, tiles_before + tiles, 31);
    if (lane < n_active) tile0[lane] = tiles_before;
    if (lane == 0) tile0[n_active] = total, scratch[0] = n_active, scratch[1] = total;
    if constexpr (kCosts && !uniform_step_cost<Costs>()) {
      // route_tables' cost0: per phase, the exclusive prefix of the active experts' step costs, the total after.
      const int full = contract::tile_class(kTileN), last = contract::tile_class(c - (tiles - 1) * kTileN);
#pragma unroll
      for (int p = 0; p < 2; ++p) {
        const int cost = lane >= n_active ? 0
                         : p == 0         ? (tiles - 1) * step_cost<Costs, 0>(full) + step_cost<Costs, 0>(last)
                                          : (tiles - 1) * step_cost<Costs, 1>(full) + step_cost<Costs, 1>(last);
        const int before = warp_exclusive_sum(cost);
        if (lane < n_active) cost0[p * (kExperts + 1) + lane] = before;
        if (lane == 31) cost0[p * (kExperts + 1) + n_active] = before + cost;
      }
    }
  }
  __syncthreads();
  return RouteTables{active, count, tile0, kCosts ? cost0 : nullptr, scratch[0], scratch[1]};
}

// Step 1, by the whole block, over kExperts = E + kShared schedule experts:
// the routed ones, then (kShared) the fused shared expert, which every one of
// the `tokens` tokens reaches. `counts` is [kExperts] scratch (it may alias
// buffers that are dead until the pipeline starts); the tables are filled in
// place. An id outside [0, E) is not routed (finalize poisons its token).
template <int kExperts, int kShared, int kTileN, int kThreads, class Costs, class Routes>
__device__ RouteTables route_tables(const Routes& routes, int tokens, unsigned* counts, unsigned* s_scratch,
                                    int* active, int* count, int* tile0, int* cost0) {
  constexpr int kRouted = kExperts - kShared;
  for (int e = threadIdx.x; e < kExperts; e += kThreads) counts[e] = e < kRouted ? 0u : unsigned(tokens);
  __syncthreads();
  for (int span = 0; span < Routes::kSpans; ++span) {
    const int begin = routes.span_begin(span), size = routes.span_size(span);
    for (int r = threadIdx.x; r < size; r += kThreads) {
      const int id = routes.expert(begin + r);
      if (unsigned(id) < unsigned(kRouted)) atomicAdd(&counts[id], 1u);
    }
  }
  __syncthreads();
  // One scan carries both prefixes: active index in bits 20+ (E < 4096), token
  // tiles below (at most one per route, < 2^20).
  for (int e = threadIdx.x; e < kExperts; e += kThreads) {
    const unsigned c = counts[e];
    count[e] = int(c);  // parked: `count` is re-indexed by active index below
    counts[e] = c ? (1u << 20) | ((c + kTileN - 1) / kTileN) : 0u;
  }
  __syncthreads();
  const unsigned total = block_exclusive_scan<kThreads>(counts, kExperts, s_scratch);
  // Compact in place: the active index of e is never above e, but another
  // thread may still read count[e'] for e' > e, so go through registers.
  constexpr int kPerThread = (kExperts + kThreads - 1) / kThreads;
  int my_count[kPerThread];
  unsigned my_prefix[kPerThread];
#pragma unroll
  for (int i = 0; i < kPerThread; ++i) {
    const int e = threadIdx.x + i * kThreads;
    my_count[i] = e < kExperts ? count[e] : 0;
    my_prefix[i] = e < kExperts ? counts[e] : 0u;
  }
  __syncthreads();
#pragma unroll
  for (int i = 0; i < kPerThread; ++i) {
    const int e = threadIdx.x + i * kThreads;
    if (e < kExperts && my_count[i] > 0) {
      const int a = int(my_prefix[i] >> 20);
      active[a] = e;
      count[a] = my_count[i];
      tile0[a] = int(my_prefix[i] & 0xFFFFFu);
    }
  }
  RouteTables t{active, count, tile0, cost0, int(total >> 20), int(total & 0xFFFFFu)};
  if (threadIdx.x == 0) tile0[t.n_active] = t.tiles;
  __syncthreads();
  if constexpr (uniform_step_cost<Costs>()) return t;
  // Each active expert's step cost per phase: its full token tiles and its last one.
  for (int a = threadIdx.x; a < t.n_active; a += kThreads) {
    const int n = tile0[a + 1] - tile0[a], full = contract::tile_class(kTileN),
              last = contract::tile_class(count[a] - (n - 1) * kTileN);
    cost0[a] = (n - 1) * step_cost<Costs, 0>(full) + step_cost<Costs, 0>(last);
    cost0[kExperts + 1 + a] = (n - 1) * step_cost<Costs, 1>(full) + step_cost<Costs, 1>(last);
  }
  __syncthreads();
  for (int p = 0; p < 2; ++p) {
    int* phase_cost = cost0 + p * (kExperts + 1);
    const unsigned cost =
        block_exclusive_scan<kThreads>(reinterpret_cast<unsigned*>(phase_cost), t.n_active, s_scratch);
    if (threadIdx.x == 0) phase_cost[t.n_active] = int(cost);
  }
  __syncthreads();
  return t;
}

// Route list of token tile j of `expert`: column c < rows gets the route r
// (t * k + slot) of rank j * tile_n + c among the expert's routes in route
// order. Every lane returns the route of column `lane` (and `lane + 32` in
// `second`), -1 where there is none. A warp-wide ballot scan, kChunks x 32
// routes per round: the round's loads are independent, so they are in flight
// together (one load per round-trip made the activation producer spend most
// of the kernel here at B >= 32, and the consumers wait for its stages).
template <class Routes>
__device__ __forceinline__ void tile_routes(const Routes& routes_of, int expert, int rank0, int rows, int& first,
                                            int& second) {
  constexpr int kChunks = 8;
  const int lane = threadIdx.x % 32;
  first = second = -1;
  int running = 0;
  const u32 below = (1u << lane) - 1u;
  for (int span = 0; span < Routes::kSpans && running < rank0 + rows; ++span) {
    const int routes = routes_of.span_begin(span) + routes_of.span_size(span);
    for (int base = routes_of.span_begin(span); base < routes && running < rank0 + rows; base += 32 * kChunks) {
      int id[kChunks];
#pragma unroll
      for (int u = 0; u < kChunks; ++u) {
        const int r = base + 32 * u + lane;
        id[u] = r < routes ? routes_of.expert(r) : -1;
      }
#pragma unroll
      for (int u = 0; u < kChunks; ++u) {
        const u32 mask = __ballot_sync(0xFFFFFFFFu, id[u] == expert);
        const int c = running + __popc(mask & below) - rank0;
        // Hand route base + 32u + src to the lane that owns column c.
        for (u32 m = mask; m; m &= m - 1u) {
          const int src = __ffs(m) - 1;
          const int col = __shfl_sync(0xFFFFFFFFu, c, src);
          if (col >= 0 && col < rows) {
            if (lane == col) first = base + 32 * u + src;
            if (lane + 32 == col) second = base + 32 * u + src;
          }
        }
        running += __popc(mask);
      }
    }
  }
}

}  // namespace moejit
