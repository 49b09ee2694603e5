#pragma once
// The compute role's producer warps (ComputeRole, declared in moe_compute.cuh, which includes this file after
// the class): the weight warp's TMA boxes a K128 step, the activation warps' token rows of a segment (gathered
// by route, paired or split for GEMM1) with their scale records and route ids, and the decoder warp's FP32
// scales (kDecoded).

namespace moejit {

template <class Config>
__device__ void ComputeRole<Config>::weight_producer(const ComputeParams& p, const Ring& ring, Walker walker) {
  if (threadIdx.x % 32 != 0) return;
  prefetch_tensormap(p.w1_map);
  prefetch_tensormap(p.w2_map);
  const u64 policy = evict_first_policy();
  StageCursor<kStages> cur;
  Segment sg;
  u64 waited = 0;
  u32 steps0 = 0, steps1 = 0;
  while (walker.next(sg)) {
    const void* map = sg.phase ? p.w2_map : p.w1_map;
    const int n_rows = sg.phase ? kHidden : 2 * kInter, k = sg.phase ? kInter : kHidden;
    for (int kb = sg.k0; kb < sg.k1; ++kb) {
      timed_wait(p, &ring.empty[cur.stage], cur.phase ^ 1u, waited);
      if (p.trace && steps0 + steps1 == 0) trace(p, contract::kTraceWeightFirst, globaltimer());
      if (p.trace && sg.phase == 1 && steps1 == 0) trace(p, contract::kTraceWeightPhase1, globaltimer());
      (sg.phase ? steps1 : steps0) += 1;
      const int tiles = Shape::tiles(sg.phase, sg.mt);
      mbar_expect_tx(&ring.full_w[cur.stage], tiles * contract::kWeightStepBytes);
      // The item's 64-row tiles: one box per adjacent pair (contract::weight_box_rows).
      constexpr int kBoxes = kTiles >= 2 ? kTiles / 2 : 1, kBoxTiles = kTiles >= 2 ? 2 : 1;
#pragma unroll
      for (int b = 0; b < kBoxes; ++b) {
        if (b * kBoxTiles >= tiles) break;
        const long long row = contract::weight_step_offset(sg.expert, sg.mt * kTiles + kBoxTiles * b, kb, n_rows, k) /
                              contract::kWeightMapRowBytes;
        tma_load_2d_hint(ring.w + cur.stage * Ring::kWBytes + b * kBoxTiles * contract::kWeightStepBytes, map,
                         &ring.full_w[cur.stage], 0, int(row), policy);
      }
      cur.advance();
    }
  }
  if (p.trace) {
    trace(p, contract::kTraceWeightLast, globaltimer());
    trace(p, contract::kTraceWeightWait, waited);
    trace(p, contract::kTraceSteps0, steps0);
    trace(p, contract::kTraceSteps1, steps1);
  }
}

template <class Config>
__device__ void ComputeRole<Config>::tile_copies(TileCopies& tc, const ComputeParams& p, const Workspace& ws,
                                                 const Segment& sg) {
  const int lane = threadIdx.x % 32;
  int route0, route1;
  if (kShared && sg.expert == kExperts) {  // the shared expert's routes are its tokens in order
    const int r0 = kSharedRoute0 + sg.j * kTileRows + lane;
    route0 = lane < sg.rows ? r0 : -1;
    route1 = lane + 32 < sg.rows ? r0 + 32 : -1;
  } else {
    tile_routes(routes_of(p), sg.expert, sg.j * kTileRows, sg.rows, route0, route1);
  }
#pragma unroll
  for (int q = 0; q < kPasses; ++q) {
    const int n = q * kColsPerPass + lane / kChunks;
    // Every lane offers both of its routes; the reader picks the one of column n.
    const int r0 = __shfl_sync(0xFFFFFFFFu, route0, n % 32), r1 = __shfl_sync(0xFFFFFFFFu, route1, n % 32);
    // Past the rows: any readable address (a zero-byte copy reads nothing).
    tc.src[q] = n < sg.rows ? row_source(p, ws, sg.phase, n < 32 ? r0 : r1) + (lane % kChunks) * 16 : p.x_rows;
  }
  tc.live = 0;
#pragma unroll
  for (int q = 0; q < kPasses; ++q) tc.live |= u32(q * kColsPerPass + lane / kChunks < sg.rows) << q;
#pragma unroll
  for (int h = 0; h < kColGroups; ++h) {
    const int n = lane + 32 * h, r = h ? route1 : route0;
    tc.route[h] = n < sg.rows ? r : -1;
    // GEMM1: the caller's read-only x_scales words (or the owner rank's); GEMM2: the handoff's records.
    if constexpr (kRanks > 1)
      tc.scale_src[h] = sg.phase == 0 ? reinterpret_cast<const u32*>(ep(p.ws).scale_row(
                                            r, reinterpret_cast<const u8*>(p.x_scales) - p.ws, 4 * (kHidden / 128)))
                                      : ws.handoff_s + u64(r) * kKb2 * (contract::kScaleRecordBytes / 4);
    else
      tc.scale_src[h] = sg.phase == 0 ? p.x_scales + u64(token_of(r)) * (kHidden / 128)
                                      : ws.handoff_s + u64(r) * kKb2 * (contract::kScaleRecordBytes / 4);
  }
}

template <class Config>
__device__ void ComputeRole<Config>::activation_producer(const ComputeParams& p, const Ring& ring, Walker walker,
                                                         const Workspace& ws, const RouteTables& t, int w) {
  const int lane = threadIdx.x % 32;
  // Activation rows may come from the dispatch role (BF16 input, the exact path's BF16 image).
  griddep_wait();
  const bool tracer = lane == 0 && w == 0;  // the first activation warp's times stand for all
  if (tracer) trace(p, contract::kTraceActStart, globaltimer());
  u64 ready_waited = 0, waited = 0, routes_time = 0;
  StageCursor<kStages> cur;
  Segment sg;
  int cached_phase = -1, cached_a = -1, cached_j = -1;
  TileCopies tc;
  int ready_a = -1;
  u32 ready_mask = 0;  // GEMM2: the K128 blocks of active expert ready_a known to be handed off (I/128 <= 32)
  u32 dst_offsets[kPasses];
#pragma unroll
  for (int q = 0; q < kPasses; ++q)
    dst_offsets[q] = Atom::x_chunk_offset(q * kColsPerPass + lane / kChunks, lane % kChunks);
  // Paired GEMM1 rows (kPaired): token r's large row at column 2r, its small row at 2r + 1, one pass.
  static_assert(!kPaired || contract::kPairedRows <= kColsPerPass, "paired rows are staged in one pass");
  // Every warp walks every step and fills the stages of its own steps only (contract::activation_warps), waiting
  // for no other step: a skipped stage can complete two phases before a slow warp would look, and a parity wait
  // would then block on the phase after, its own to fill. Its own step's wait is never two phases early where
  // contract::activation_warps_fit holds (the consumers' release order).
  static_assert(contract::activation_warps_fit(kActWarps, kStages, kOwners), "contract::activation_warps_fit");
  int step = 0;
  while (walker.next(sg)) {
    // This warp's first step of the segment, past its end where it has none.
    const int mine = kActWarps > 1 ? (w - step % kActWarps + kActWarps) % kActWarps : 0;
    if (mine < sg.k1 - sg.k0 && (sg.phase != cached_phase || sg.a != cached_a || sg.j != cached_j)) {
      const u64 t0 = p.trace ? globaltimer() : 0;
      tile_copies(tc, p, ws, sg);
      if (p.trace) routes_time += globaltimer() - t0;
      cached_phase = sg.phase, cached_a = sg.a, cached_j = sg.j;
    }
    const int tiles = t.tile0[sg.a + 1] - t.tile0[sg.a];
    for (int k = sg.k0; k < sg.k1; ++k, ++step) {
      if (kActWarps > 1 && step % kActWarps != w) {
        cur.advance();
        continue;
      }
      if (sg.phase == 1 && (sg.a != ready_a || !(ready_mask >> k & 1u))) {
        // GEMM2's K128 block k needs the four 64-row GEMM1 tiles of its 128 intermediate columns, per token tile.
        if (lane == 0) {
          const u64 t0 = p.trace ? globaltimer() : 0;
          spin(ws, [&] { return ld_acquire_gpu(ws.ready + sg.a * kKb2 + k) >= 4 * tiles; });
          if (p.trace) ready_waited += globaltimer() - t0;
        }
        __syncwarp();
        if (sg.a != ready_a) ready_a = sg.a, ready_mask = 0;
        ready_mask |= 1u << k;
      }
      const int s = cur.stage;
      // The caller's scale words, decoded by this lane into the stage's FP32 records (kF32ScaleRecords): loaded
      // before the wait for the stage, so their latency hides behind it.
      u32 scale_word[kColGroups] = {};
      if constexpr (kFp8Rows && Atom::kF32ScaleRecords)
        if (sg.phase == 0)
#pragma unroll
          for (int h = 0; h < kColGroups; ++h)
            if (lane + 32 * h < kTileN && tc.route[h] >= 0) scale_word[h] = tc.scale_src[h][k];
      timed_wait(p, &ring.empty[s], cur.phase ^ 1u, waited);
      const u32 tile = smem_addr(ring.x_tile(s));
      const bool paired = paired_segment(sg);
      if constexpr (kPaired)
        if (paired) {
          // kPairedAll: token tiles of kPairedRows rows (kTileRows).
          if (sg.rows > contract::kPairedRows) __trap();
          // The small elements' rows sit kSmallRows after the large ones (as below).
          constexpr long long kSmallRows = kWs.x_small - kWs.x_q;
          const u32 live = (tc.live & 1u) * 16u, r = lane / kChunks, c = lane % kChunks;
          cp_async_16_zfill(tile + Atom::x_chunk_offset(2 * r, c), tc.src[0] + k * kChunkBytes, live);
          cp_async_16_zfill(tile + Atom::x_chunk_offset(2 * r + 1, c), tc.src[0] + kSmallRows + k * kChunkBytes, live);
        }
#pragma unroll
      for (int q = 0; q < kPasses; ++q) {
        if (paired || q * kColsPerPass >= sg.rows) break;  // warp-uniform: small B stages a row or two
        cp_async_16_zfill(tile + dst_offsets[q], tc.src[q] + k * kChunkBytes, (tc.live >> q & 1u) * 16u);
      }
      if (kSplitRows && sg.phase == 0 && !paired) {
        // The small elements' rows sit kSmallRows after the large ones: split rows are always the dispatch
        // role's (the planner runs it), so x_rows is the workspace's x_q.
        constexpr long long kSmallRows = kWs.x_small - kWs.x_q;
        const u32 small_tile = smem_addr(ring.x_small_tile(s, contract::segment_columns(sg.rows, kTileN)));
#pragma unroll
        for (int q = 0; q < kPasses; ++q) {
          if (q * kColsPerPass >= sg.rows) break;
          cp_async_16_zfill(small_tile + dst_offsets[q], tc.src[q] + kSmallRows + k * kChunkBytes,
                            (tc.live >> q & 1u) * 16u);
        }
      }
#pragma unroll
      for (int h = 0; h < kColGroups; ++h) {
        const int n = lane + 32 * h;
        if (n < kTileN) {
          if (kFp8Rows && tc.route[h] >= 0) {
            const int col = paired ? 2 * n : n;  // a live token's (n < rows), so 2n < 8 when paired
            if (sg.phase != 0)
              cp_async_16(ring.x_scale_record(s, n), tc.scale_src[h] + k * (contract::kScaleRecordBytes / 4));
            else if constexpr (Atom::kF32ScaleRecords)
              Atom::store_scale_record(ring.x_scale_record(s, col), scale_word[h]);
            else
              cp_async_4(ring.x_scale_record(s, col), tc.scale_src[h] + k);
          }
          ring.route[s * kTileN + n] = tc.route[h];
        }
      }
      cp_async_track(&ring.full_x[s]);
      mbar_arrive(&ring.full_x[s]);
      cur.advance();
    }
  }
  if (tracer) {
    trace(p, contract::kTraceActReadyWait, ready_waited);
    trace(p, contract::kTraceActWait, waited);
    trace(p, contract::kTraceActRoutes, routes_time);
  }
}

// The decoder warp (kDecoded): once both producers have filled a stage, every
// scale word of it (its weight rows' and its token columns') becomes four FP32
// powers of two in wdec / xdec, and each lane arrives on decoded[s]. The
// consumers' loops then read ready scales: decoding them there cost ~24
// integer operations a thread per K128 step (ncu: the consumers' issue rate
// bounds the layer from B = 8 up).
template <class Config>
__device__ void ComputeRole<Config>::scale_decoder(const Ring& ring, Walker walker) {
  const int lane = threadIdx.x % 32;
  StageCursor<kStages> cur;
  Segment sg;
  while (walker.next(sg)) {
    for (int k = sg.k0; k < sg.k1; ++k) {
      const int s = cur.stage;
      mbar_wait(&ring.full_w[s], cur.phase);
      mbar_wait(&ring.full_x[s], cur.phase);
      if constexpr (kDecoded != 0) Atom::template decode_scales<kTiles, kTileN>(ring, s, lane);  // its atom's
      mbar_arrive(&ring.decoded[s]);  // every lane, after its own stores
      cur.advance();
    }
  }
}

template <class Config>
__device__ const u8* ComputeRole<Config>::row_source(const ComputeParams& p, const Workspace& ws, int phase,
                                                     int route) {
  constexpr long long kPitch = (long long)kHidden * (kChunkBytes / 128);
  if (phase == 0) {
    if constexpr (kRanks > 1) return ep(p.ws).row(route, p.x_rows - p.ws, kPitch);  // the owner rank's rows
    return p.x_rows + u64(token_of(route)) * kPitch;
  }
  return ws.handoff + u64(route) * contract::handoff_row_bytes(kPath, kInter);
}

}  // namespace moejit
