#pragma once
// The compute role's consumer warpgroups (ComputeRole, declared in moe_compute.cuh, which includes this file
// after the class): the segment loop, each segment's mainloop on the Atom (paired, split or plain GEMM1; the
// step owners' loops; the unit schedule's GEMM2 items), and the stream schedule's cut items.

namespace moejit {

template <class Config>
__device__ void ComputeRole<Config>::consumer(const ComputeParams& p, const Ring& ring, Walker walker,
                                              const Workspace& ws, float* s_amax, float* s_reduce, int tag) {
  StageCursor<kStages> cur;
  Segment sg;
  while (walker.next(sg)) {
    // The activation producer stages the small rows by the same width (contract::segment_columns).
    const int n = contract::segment_columns(warp_uniform(sg.rows), kTileN);
    if constexpr (kUnits) {
      if (sg.phase == 1) {  // a unit's GEMM2 items (UnitWalker: mt 0 first), in one loop
        if (n == 8)
          unit_gemm2<8>(p, ring, cur, walker, sg, ws);
        else
          unit_gemm2<(kTileN >= 16 ? 16 : 8)>(p, ring, cur, walker, sg, ws);
        continue;
      }
    }
    if (n == 8)
      segment<8>(p, ring, cur, walker, sg, ws, s_amax, s_reduce, tag);
    else if (n == 16)
      segment<(kTileN >= 16 ? 16 : 8)>(p, ring, cur, walker, sg, ws, s_amax, s_reduce, tag);
    else if (n == 32)
      segment<(kTileN >= 32 ? 32 : 8)>(p, ring, cur, walker, sg, ws, s_amax, s_reduce, tag);
    else
      segment<(kTileN >= 64 ? 64 : 8)>(p, ring, cur, walker, sg, ws, s_amax, s_reduce, tag);
  }
}

// The route of each of this thread's token columns 8i + 2t + q, from the
// segment's first stage (waiting is idempotent: the stage cannot move on
// before this thread releases it).
template <class Config>
template <int N>
__device__ void ComputeRole<Config>::stage_routes(const Ring& ring, const StageCursor<kStages>& cur,
                                                  int (&route)[N / 4]) {
  const int t = threadIdx.x % 4;
  mbar_wait(&ring.full_x[cur.stage], cur.phase);
#pragma unroll
  for (int i = 0; i < N / 8; ++i)
#pragma unroll
    for (int q = 0; q < 2; ++q) route[2 * i + q] = ring.routes(cur.stage)[8 * i + 2 * t + q];
}

template <class Config>
template <int N>
__device__ void ComputeRole<Config>::fill(float (&acc)[kT][N / 2], float v) {
#pragma unroll
  for (int u = 0; u < kT; ++u)
#pragma unroll
    for (int i = 0; i < N / 2; ++i) acc[u][i] = v;
}

template <class Config>
template <int N>
__device__ void ComputeRole<Config>::segment(const ComputeParams& p, const Ring& ring, StageCursor<kStages>& cur,
                                             const Walker& walker, const Segment& sg, const Workspace& ws,
                                             float* s_amax, float* s_reduce, int tag) {
  int route[N / 4];
  stage_routes<N>(ring, cur, route);
  float acc[kT][N / 2];
  fill<N>(acc, 0.0f);
  // A warpgroup past the tiles of a short item: its stages, its part in the item's barriers, nothing else.
  // (Step owners: warpgroup 2, whose sums warpgroups 0 and 1 take.)
  const bool idle = warp_uniform(threadIdx.x / 128) * kT >= Shape::tiles(sg.phase, sg.mt);
  if constexpr (kOwners) {  // GEMM1 on paired rows (the producer stages them so); a unit's GEMM2 is unit_gemm2
    static_assert(N == 8, "step owners run 8-column token tiles");
    float both[2][kT][N / 2];
    fill<N>(both[0], 0.0f);
    fill<N>(both[1], 0.0f);
    Atom::template mainloop_paired_owned<kT>(both, ring, cur, sg.k1 - sg.k0, warp_uniform(threadIdx.x / 128));
    owners_reduce<N>(both, acc, s_reduce);
  } else if (idle) {
    pass_stages(ring, cur, sg.k1 - sg.k0);
  } else if constexpr (kPaired && N == 8) {  // wider segments of kPairedShort run the split below
    if (sg.phase != 0)
      Atom::template mainloop<N, kT>(acc, ring, cur, sg.k1 - sg.k0);
    else if (kPaired == contract::kPairedShort && warp_uniform(sg.rows) > contract::kPairedRows)  // !paired_segment
      Atom::template mainloop_split<N, kT>(acc, ring, cur, sg.k1 - sg.k0);
    else
      Atom::template mainloop_paired<kT>(acc, ring, cur, sg.k1 - sg.k0);
  } else if constexpr (kSplitRows) {
    if (sg.phase == 0)
      Atom::template mainloop_split<N, kT>(acc, ring, cur, sg.k1 - sg.k0);
    else
      Atom::template mainloop<N, kT>(acc, ring, cur, sg.k1 - sg.k0);
  } else {
    Atom::template mainloop<N, kT>(acc, ring, cur, sg.k1 - sg.k0);
  }

  if constexpr (kSchedule == contract::kScheduleStream) {  // the one schedule that cuts items
    stream_pieces<N>(p, walker, sg, ws, acc, idle, tag);
    if (sg.k0 > 0) return;  // a later piece: its owner finishes the item
  }
  if (idle) return trace_segment_done(p, sg.phase);
  if (frame_sums(sg)) {
    // GEMM1's sums are in each token's frame (moe_frame_rows), which every scale byte of its row holds.
    float frame[N / 4];
#pragma unroll
    for (int c = 0; c < N / 4; ++c)
      frame[c] = route[c] < 0 ? 0.0f : ue8m0_byte_value<0>(p.x_scales[u64(token_of(route[c])) * (kHidden / 128)]);
#pragma unroll
    for (int u = 0; u < kT; ++u)
#pragma unroll
      for (int i = 0; i < N / 2; ++i) acc[u][i] = acc[u][i] * Atom::kAccScale * frame[2 * (i / 4) + i % 2];
  } else {
#pragma unroll
    for (int u = 0; u < kT; ++u)
#pragma unroll
      for (int i = 0; i < N / 2; ++i) acc[u][i] *= Atom::kAccScale;
  }
  // A unit's GEMM2 is one K block of the route row: the first block's partial carries the bias. With three GEMM1
  // loops (short segments paired in 16-column tiles) the expert is read again from the tables: held across the
  // K-loops for the biases alone, it spilled there (DSV4.1-Flash).
  if (p.b1 && (!kUnits || sg.phase == 0 || sg.k0 == 0)) {
    Segment with = sg;
    if constexpr (kPaired == contract::kPairedShort && kTileN > 8) with.expert = walker.t->active[sg.a];
    add_biases<N>(p, with, route, acc, threadIdx.x / 128);
  }
  if (sg.phase == 0)
    gemm1_epilogue<N>(p, sg, ws, route, acc, s_amax);
  else if constexpr (kUnits)
    unit_epilogue<N>(p, sg, ws, route, acc, threadIdx.x / 128);
  else
    gemm2_epilogue<N>(sg, ws, route, acc);
  trace_segment_done(p, sg.phase);
}

// Step owners after GEMM1: each warpgroup holds both pairs' sums over its own steps; warpgroup p adds the
// other two's sums of pair p, in warpgroup order, from shared memory (contract::owner_reduce_bytes).
template <class Config>
template <int N>
__device__ void ComputeRole<Config>::owners_reduce(const float (&both)[2][kT][N / 2], float (&acc)[kT][N / 2],
                                                   float* red) {
  const int group = warp_uniform(threadIdx.x / 128), tid = threadIdx.x % 128;
  auto at = [&](int pair, int source, int u, int i) {
    return red + (((pair * 2 + source) * kT + u) * (kTileN / 2) + i) * 128 + tid;
  };
  named_barrier_sync(kAllConsumersBarrier, kConsumerThreads);  // the last unit's sums are read
#pragma unroll
  for (int pair = 0; pair < 2; ++pair)
    if (pair != group)
#pragma unroll
      for (int u = 0; u < kT; ++u)
#pragma unroll
        for (int i = 0; i < N / 2; ++i) *at(pair, group == 2 ? 1 : 0, u, i) = both[pair][u][i];
  named_barrier_sync(kAllConsumersBarrier, kConsumerThreads);
  if (group < 2)
#pragma unroll
    for (int u = 0; u < kT; ++u)
#pragma unroll
      for (int i = 0; i < N / 2; ++i)
        acc[u][i] = (group == 0 ? both[0][u][i] : both[1][u][i]) + *at(group, 0, u, i) + *at(group, 1, u, i);
}

// The unit schedule's GEMM2 for one token tile of a unit: K block sg.k0 of
// every item of H, one step each, in one K-loop; each item's sums become
// partial rows as the next step's operands load. The walker's segments of
// the other items are the ones this loop ran.
template <class Config>
template <int N>
__device__ void ComputeRole<Config>::unit_gemm2(const ComputeParams& p, const Ring& ring, StageCursor<kStages>& cur,
                                                Walker& walker, const Segment& sg, const Workspace& ws) {
  static_assert(kUnits && N <= 16, "the unit schedule runs on the fast atom, whose token tiles are at most 16 wide");
  int route[N / 4];
  stage_routes<N>(ring, cur, route);
  // The sums of an item's tiles first_tile .. first_tile + kT - 1, tile group `pair`, as partial rows. A pass past
  // the tiles of a short last item ran on stale weights: nothing of it is stored.
  auto store = [&](int item, int first_tile, int pair, float(&sums)[kT][N / 2]) {
    if (first_tile < Shape::tiles(1, item)) {
      Segment it = sg;
      it.mt = item;
#pragma unroll
      for (int u = 0; u < kT; ++u)
#pragma unroll
        for (int i = 0; i < N / 2; ++i) sums[u][i] *= Atom::kAccScale;
      if (p.b1 && it.k0 == 0) add_biases<N>(p, it, route, sums, pair);
      unit_epilogue<N>(p, it, ws, route, sums, pair);
    }
    fill<N>(sums, 0.0f);
  };
  if constexpr (kOwners) {
    float both[2][kT][N / 2];
    fill<N>(both[0], 0.0f);
    fill<N>(both[1], 0.0f);
    Atom::template mainloop_items_owned<N, kT>(both, ring, cur, Shape::mt(1), warp_uniform(threadIdx.x / 128),
                                               [&](int item, float(&sums)[2][kT][N / 2]) {
                                                 store(item, 0, 0, sums[0]);
                                                 store(item, kT, 1, sums[1]);
                                               });
  } else {
    float acc[kT][N / 2];
    fill<N>(acc, 0.0f);
    const int first_tile = warp_uniform(threadIdx.x / 128) * kT;
    Atom::template mainloop_items<N, kT>(acc, ring, cur, Shape::mt(1), [&](int item, float(&sums)[kT][N / 2]) {
      store(item, first_tile, threadIdx.x / 128, sums);
    });
  }
  Segment skipped;
  for (int item = 1; item < Shape::mt(1); ++item) walker.next(skipped);
  trace_segment_done(p, 1);
}

// The stream schedule's cut items: a later piece leaves its partial sums
// for the item's owner (and is done); the owner adds them.
template <class Config>
template <int N>
__device__ void ComputeRole<Config>::stream_pieces(const ComputeParams& p, const Walker& walker, const Segment& sg,
                                                   const Workspace& ws, float (&acc)[kT][N / 2], bool idle, int tag) {
  const int kbs = Shape::kb(sg.phase);
  const int slot = sg.phase * kGrid;
  if (sg.k0 > 0) {
    // A later piece of an item: leave the partial sums for its owner.
    float4* mine = partial_granules(ws, slot + cta_index());
    if (!idle)
#pragma unroll
      for (int u = 0; u < kT; ++u)
#pragma unroll
        for (int i = 0; i < N / 2; i += 4)
          mine[contract::partial_granule((u * (N / 2) + i) / 4, 0, kConsumerThreads)] =
              make_float4(acc[u][i], acc[u][i + 1], acc[u][i + 2], acc[u][i + 3]);
    // The barrier orders every consumer's stores before thread 0's release, which is cumulative (PTX memory
    // model: the CTA-scope barrier is in causality order with it), so one release publishes them all; a fence
    // in every thread (fence.sc.gpu) cost ~5% of the consumers' stall samples at B = 2 (ncu).
    named_barrier_sync(kAllConsumersBarrier, kConsumerThreads);
    if (threadIdx.x == 0) st_release_gpu(ws.flags + slot + cta_index(), tag);
    trace_segment_done(p, sg.phase);
    return;
  }
  if (sg.k1 < kbs) {
    // The owner of an item cut by its share: add the later pieces in step
    // order, from the CTAs that ran them first thing in their shares.
    const long long item_end = walker.step + (kbs - sg.k1);  // the walker stands at step item * kbs + k1
    for (int b = cta_index() + 1; b < kGrid; ++b) {
      const long long lo = walker.share(sg.phase, b);
      if (lo >= item_end) break;
      if (walker.share(sg.phase, b + 1) == lo) continue;  // an empty share
      if (threadIdx.x == 0) {
        const u64 t0 = p.trace ? globaltimer() : 0;
        spin(ws, [&] { return ld_acquire_gpu(ws.flags + slot + b) == tag; });
        // Added in the buffer, not summed in a register: the consumers have none to spare.
        if (p.trace) atomicAdd(trace_slot(p, contract::kTraceConsumerFlagWait), globaltimer() - t0);
      }
      named_barrier_sync(kAllConsumersBarrier, kConsumerThreads);
      const float4* theirs = partial_granules(ws, slot + b);
      if (!idle)
#pragma unroll
        for (int u = 0; u < kT; ++u)
#pragma unroll
          for (int i = 0; i < N / 2; i += 4) {
            const float4 v = ld_cg4(theirs + contract::partial_granule((u * (N / 2) + i) / 4, 0, kConsumerThreads));
            acc[u][i] += v.x, acc[u][i + 1] += v.y, acc[u][i + 2] += v.z, acc[u][i + 3] += v.w;
          }
    }
  }
}

// The last write wins: the end of this CTA's last GEMM1 segment, and of its last segment.
template <class Config>
__device__ void ComputeRole<Config>::trace_segment_done(const ComputeParams& p, int phase) {
  if (threadIdx.x != 0 || !p.trace) return;
  const u64 now = globaltimer();
  if (phase == 0) trace(p, contract::kTraceConsumerPhase1, now);
  trace(p, contract::kTraceConsumerDone, now);
}

}  // namespace moejit
