#pragma once
// Role 2, compute: a persistent grid of resident CTAs runs GEMM1 (clamped
// SwiGLU, MXFP8 requantization into the handoff) and GEMM2 (each route's BF16
// output row into the combine arena) for every routed token.
//
// Swap-AB: weights on M (64-row tiles), tokens on N, so the weight stream
// never depends on the token count. The schedule (moe_schedule.cuh) is
// derived by every CTA from topk_ids, and every CTA streams the same number
// of weight bytes. Warps:
//   consumers: kGroups warpgroups, each the MMA atom's mainloop and the
//        epilogues of kTiles / kGroups 64-row weight tiles of the item (a
//        token tile's last item may be shorter: warpgroups past its tiles
//        only pass its stages on);
//   then the weight producer warp: per K128 step, TMA boxes of the item's
//        tiles (payloads + scale words), never waiting on anything but a free stage;
//   and the activation producer warp: the token rows of the item (gathered by route,
//        16-byte cp.async into the atom's layout), their scale words and the
//        route ids; a GEMM2 step first waits until the GEMM1 tiles feeding
//        its K128 block of the intermediate have been handed off;
//   and, with decoded scales (kDecoded), the decoder warp: each filled stage's
//        UE8M0 scale words as FP32 for the consumers (scale_decoder).
// The Atom (moe_atom_*.cuh) owns the math: operand reads, the K loop, when a
// stage is released, the handoff format and the accumulator scale.

#include "moe_atom_sm90_bf16.cuh"
#include "moe_atom_sm90_fp8.cuh"
#if defined(__CUDA_ARCH_FEAT_SM120_ALL) || defined(__CUDA_ARCH_FEAT_SM121_ALL)
#include "moe_atom_sm120.cuh"
#endif
#include "moe_ep.cuh"
#include "moe_pipeline.cuh"
#include "moe_schedule.cuh"

namespace moejit {

// The kernel's formals (codegen::moe_compute_spec builds the entry from the
// same fields, by name, in this order).
struct ComputeParams {
  const i32* topk_ids;        // [B][k]
  const float* topk_weights;  // [B][k]
  const u8* x_rows;           // GEMM1 activation rows: E4M3 [B][H] or the BF16 image [B][H]
  const u32* x_scales;        // [B][H/128] UE8M0 words (fp8 atoms)
  const void* w1_map;         // TMA over W1's step blobs [E][2I/128][H/128][2] (contract::weight_box_rows)
  const void* w2_map;         // TMA over W2's step blobs [E][H/128][I/128][2]
  u8* ws;                     // the workspace (contract::workspace_layout)
  const float2* b1;           // biases (config.biases), else null: (gate, up) of intermediate column i, [E][I']
  const float* b2;            // [E][H']: output row h
  u32 tokens;
  float clamp;
  float alpha;  // gpt-oss's sigmoid slope (kActivationGptOss)
  u64* trace;   // [grid][contract::kTraceSlots] milestones (contract::TraceSlot), or null
};

__device__ __forceinline__ float round_bf16(float v) {
  return bf16_to_float(float_to_bf16_rne(v));
}

// 1/x for x >= 1 (x = 1 + e^-g): the hardware approximation and one Newton
// step, which rounds like IEEE division but for about one input in 2^20 (one
// ulp). rcp.rn.f32 is a helper call in relocatable code (see moe_schedule.cuh).
__device__ __forceinline__ float reciprocal(float x) {
  float r;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
  return x > 3.0e38f ? 0.0f : fmaf(r, fmaf(-x, r, 1.0f), r);  // 1/inf; NaN propagates
}

// The gated activations (codegen::Activation), on g' = min(g, c) and
// u' = clamp(u, -c, c) with c, g', u' rounded to BF16 (seed §5.4):
//   kActivationSwiglu: act = g' * sigmoid(g') * u'
//   kActivationGptOss: act = g' * sigmoid(alpha * g') * (u' + 1)   (gpt-oss)
// Comparisons are written so that NaN propagates.
constexpr int kActivationSwiglu = 0, kActivationGptOss = 1;
template <int kActivation>
__device__ __forceinline__ float gated_activation(float gate, float up, float clamp_bf16, float alpha) {
  const float g = round_bf16(gate > clamp_bf16 ? clamp_bf16 : gate);
  const float u = round_bf16(up > clamp_bf16 ? clamp_bf16 : (up < -clamp_bf16 ? -clamp_bf16 : up));
  if constexpr (kActivation == kActivationGptOss) return g * reciprocal(1.0f + expf(-alpha * g)) * (u + 1.0f);
  return g * reciprocal(1.0f + expf(-g)) * u;
}

template <int kExperts, int kTopK, int kHidden, int kInter, int kCapacity, int kGroups, int kTiles, int kTileN,
          int kStages, int kGrid, int kActivation, int kShared, int kDecoded, class Atom, int kRanks, int kEp,
          int kSchedule, int kPaired>
struct ComputeRole {
  static constexpr int kPath = Atom::kPath;
  static constexpr bool kFp8Rows = contract::path_fp8_rows(kPath);
  static constexpr bool kSplitRows = contract::path_split_rows(kPath);
  static constexpr contract::MoeDims kDims{kExperts, kTopK, kHidden, kInter, kCapacity, kPath, kShared, kRanks, kEp};
  // The schedule's experts: the E routed ones, then (kShared) the fused shared
  // expert, expert E of the packed weights, whose route for token t is
  // kSharedRoute0 + t with weight 1 (contract::shared_route0).
  static constexpr int kSlots = kExperts + kShared;
  static constexpr int kSharedRoute0 = int(contract::shared_route0(kDims));
  static constexpr contract::ComputeSmemLayout kSmem =
      contract::compute_smem_layout(kPath, kGroups, kTiles, kTileN, kStages, kSlots, kGrid, kDecoded);
  static constexpr int kT = contract::tiles_per_group(kGroups, kTiles);  // 64-row tiles a warpgroup computes at once
  // Step owners (contract::step_owners): the unit schedule's 4-tile items on three warpgroups, each running whole
  // steps; a warpgroup's pair is then the tiles of its pass, and warpgroup p runs pair p's GEMM1 epilogue.
  static constexpr bool kOwners = contract::step_owners(kGroups, kTiles);
  static constexpr int kConsumerThreads = contract::consumer_threads(kGroups);
  static constexpr int kThreads = contract::compute_threads(kGroups, kDecoded);
  static constexpr int kWeightWarp = kConsumerThreads / 32, kActivationWarp = kWeightWarp + 1,
                       kDecodeWarp = kActivationWarp + 1;
  static_assert(!kDecoded || kPath == contract::kPathSm90Fp8, "decoded scales: the E4M3 wgmma atom's UE8M0 words");
  static constexpr contract::WorkspaceLayout kWs = contract::workspace_layout(kDims);
  static constexpr int kChunkBytes = contract::x_chunk_bytes(kPath);
  static constexpr int kChunks = kChunkBytes / 16;  // cp.async chunks of one token's K128 slice
  static constexpr int kKb2 = kInter / 128;
  static_assert(kKb2 <= 32, "GEMM2 readiness is tracked in a 32-bit mask of K128 blocks");
  using Ring = StageRing<kPath, kTiles, kTileN, kStages, kDecoded != 0>;
  static constexpr bool kUnits = kSchedule == contract::kScheduleUnits;
  // The routing tables of a step of at most 32 routes by one warp (route_tables_warp: about 1 us sooner to the
  // first weight copy on the H200), in the unit schedule's kernel (planned at B = 1) only. Not in the stream
  // kernels: at their 128-register cap the second prologue moved their allocation (4 bytes spilled, two more
  // instructions a K-loop step; 1-2 points slower at B = 8-16, where the tables are not even built that way,
  // bench/results/2026-12-03-h200-prologue-and-loops.md).
  static constexpr bool kWarpTables = kRanks == 1 && kUnits;
  using StreamWalker = SegmentWalker<kSlots, kHidden, kInter, kTiles, kTileN, kGrid, Atom, kSmem.shares>;
  using Walker = typename SelectType<kUnits, UnitWalker<kHidden, kInter, kTiles, kTileN, kGrid>, StreamWalker>::type;
  using Shape = PhaseShape<kHidden, kInter, kTiles>;
  static_assert(kSchedule == contract::kScheduleStream || kSchedule == contract::kScheduleUnits, "a schedule");
  static_assert(!kUnits || kRanks == 1, "the unit schedule runs on one GPU: finalize adds its partial rows");
  static_assert(!kOwners || (kUnits && kPaired == contract::kPairedAll && !kDecoded),
                "step owners: the unit schedule's fast kernel");
  // kPaired: GEMM1's split rows paired (contract::kPairedRows, MoeLaunchPlan::paired_rows): in every segment, or
  // in those of at most kPairedRows rows (contract::kPairedShort).
  static_assert(kPaired == contract::kPairedNone || kPaired == contract::kPairedAll ||
                    kPaired == contract::kPairedShort,
                "a pairing mode");
  static_assert(!kPaired || (kSplitRows && kTileN == 8 && kRanks == 1), "paired rows: one 8-column tile, one GPU");
  __device__ static bool paired_segment(const Segment& sg) {
    return kPaired && sg.phase == 0 && (kPaired == contract::kPairedAll || sg.rows <= contract::kPairedRows);
  }
  static_assert(StreamWalker::template costs_fit_32_bits<(kRanks * kCapacity + kTileN - 1) / kTileN>(),
                "the schedule's cost into one expert fits 32 bits");
  static_assert(contract::last_item_runs(kPath, kGroups, kTiles, Shape::rest(0)) &&
                    contract::last_item_runs(kPath, kGroups, kTiles, Shape::rest(1)),
                "a token tile's last item is one the role runs");
  static_assert(contract::compute_smem_valid(kPath, kGroups, kTiles, kTileN, kStages, kSlots), "compute SMEM layout");
  static_assert(kSlots < 4096, "the routing prologue packs active indices in 12 bits");
  static_assert(kShared == 0 || kShared == 1, "one fused shared expert at most");
  static_assert(kRanks == 1 || kShared == 0, "expert parallelism runs routed experts only");
  // Expert parallelism (kRanks > 1): every rank's routes that reach this rank's experts (moe_ep.cuh).
  using Ep = EpRoutes<kExperts, kTopK, kCapacity, kRanks,
                      EpLayout<kExperts, kTopK, kHidden, kInter, kCapacity, kPath, kShared, kRanks, kEp>>;
  static_assert(kRanks > 1 || kEp == 0, "the EpMode bits are expert parallelism's");
  static_assert(contract::path_cost_weighted(kPath) == !uniform_step_cost<Atom>(),
                "the SMEM layout holds the share table exactly when the atom's step costs differ");

  __device__ static int token_of(int route) {
    return kShared && route >= kSharedRoute0 ? route - kSharedRoute0 : route / kTopK;
  }
  __device__ static float weight_of(const ComputeParams& p, int route) {
    if constexpr (kRanks > 1) return ep(p.ws).weight(route);
    return kShared && route >= kSharedRoute0 ? 1.0f : p.topk_weights[route];
  }
  // The routes the schedule reads; with several ranks, nothing when they never arrived.
  __device__ static Ep ep(const u8* ws, bool arrived = true) {
    return Ep{reinterpret_cast<const contract::MoeHeader*>(ws + kWs.header), arrived};
  }
  __device__ static auto routes_of(const ComputeParams& p, bool arrived = true) {
    if constexpr (kRanks > 1)
      return ep(p.ws, arrived);
    else
      return LocalRoutes{p.topk_ids, int(p.tokens) * kTopK};
  }

  // One of this CTA's trace slots (contract::TraceSlot); nothing without a trace buffer.
  __device__ static u64* trace_slot(const ComputeParams& p, int slot) {
    return p.trace + blockIdx.x * contract::kTraceSlots + slot;
  }
  __device__ static void trace(const ComputeParams& p, int slot, u64 value) {
    if (p.trace) *trace_slot(p, slot) = value;
  }
  // mbar_wait, adding the nanoseconds it took to `waited` when tracing.
  __device__ static void timed_wait(const ComputeParams& p, u64* bar, u32 parity, u64& waited) {
    if (!p.trace) return mbar_wait(bar, parity);
    const u64 t0 = globaltimer();
    mbar_wait(bar, parity);
    waited += globaltimer() - t0;
  }

  struct Workspace {
    contract::MoeHeader* header;
    int* ready;
    u8* handoff;
    u32* handoff_s;
    u16* arena;
    int* flags;
    float* partials;
  };

  // Named barriers: 1 + g for group g's epilogue, then one for all consumers (0 is __syncthreads).
  static constexpr int kGroupBarrier = 1, kAllConsumersBarrier = kGroupBarrier + contract::kMaxGroups;

  __device__ static Workspace workspace(u8* ws) {
    return {reinterpret_cast<contract::MoeHeader*>(ws + kWs.header),
            reinterpret_cast<int*>(ws + kWs.ready),
            ws + kWs.handoff,
            reinterpret_cast<u32*>(ws + kWs.handoff_s),
            reinterpret_cast<u16*>(ws + kWs.arena),
            reinterpret_cast<int*>(ws + kWs.fixed_bytes),
            reinterpret_cast<float*>(ws + contract::partials_offset(kDims, kGrid))};
  }

  // Spins on ready() (a wait inside this grid); with several ranks, bounded as ep_wait, since a CTA that gave
  // up on another rank leaves pieces nobody writes.
  template <class Ready>
  __device__ static void spin(const Workspace& ws, Ready ready) {
    if constexpr (kRanks > 1) {
      ep_wait(ws.header, globaltimer(), contract::kEpWaitPieces, ws.header->rank,
              [&](int&) { return ready() ? 1 : 0; });
    } else {
      while (!ready()) __nanosleep(64);
    }
  }

  // ---------------------------------------------------------------- producers
  __device__ static void weight_producer(const ComputeParams& p, const Ring& ring, Walker walker) {
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

  // The activation warp's copies of one token tile, fixed while the walker
  // stays on it: per pass q, this lane's 16-byte chunk c of column
  // n = q * kColsPerPass + lane / kChunks (its source at K128 step 0; bit q of
  // `live` says whether column n is one of the tile's rows), and the
  // scale-record source of columns lane and lane + 32. Derived once per tile,
  // and the chunk's place in a stage once per kernel (dst_offsets), so a pass
  // is one address add and one branch-free cp.async: with the place and a
  // branch derived per pass, this warp's dependent chains made it the
  // bottleneck of the exact path at B = 256 (ncu: consumers waited on full_x
  // a quarter of their time).
  static constexpr int kColsPerPass = 32 / kChunks;
  static constexpr int kPasses = (kTileN + kColsPerPass - 1) / kColsPerPass;
  static constexpr int kColGroups = (kTileN + 31) / 32;
  static_assert(kPasses * kColsPerPass == kTileN, "a pass's zero-filled columns stay inside the tile");
  struct TileCopies {
    const u8* src[kPasses];
    u32 live;
    const u32* scale_src[kColGroups];
    int route[kColGroups];  // the routes of columns lane and lane + 32, -1 where none
  };

  __device__ static void tile_copies(TileCopies& tc, const ComputeParams& p, const Workspace& ws, const Segment& sg) {
    const int lane = threadIdx.x % 32;
    int route0, route1;
    if (kShared && sg.expert == kExperts) {  // the shared expert's routes are its tokens in order
      const int r0 = kSharedRoute0 + sg.j * kTileN + lane;
      route0 = lane < sg.rows ? r0 : -1;
      route1 = lane + 32 < sg.rows ? r0 + 32 : -1;
    } else {
      tile_routes(routes_of(p), sg.expert, sg.j * kTileN, sg.rows, route0, route1);
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

  __device__ static void activation_producer(const ComputeParams& p, const Ring& ring, Walker walker,
                                             const Workspace& ws, const RouteTables& t) {
    const int lane = threadIdx.x % 32;
    // Activation rows may come from the dispatch role (BF16 input, the exact path's BF16 image).
    griddep_wait();
    if (lane == 0) trace(p, contract::kTraceActStart, globaltimer());
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
    while (walker.next(sg)) {
      if (sg.phase != cached_phase || sg.a != cached_a || sg.j != cached_j) {
        const u64 t0 = p.trace ? globaltimer() : 0;
        tile_copies(tc, p, ws, sg);
        if (p.trace) routes_time += globaltimer() - t0;
        cached_phase = sg.phase, cached_a = sg.a, cached_j = sg.j;
      }
      const int tiles = t.tile0[sg.a + 1] - t.tile0[sg.a];
      for (int k = sg.k0; k < sg.k1; ++k) {
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
            // kPairedAll: the planner pairs every segment at B <= kPairedRows only.
            if (sg.rows > contract::kPairedRows) __trap();
            // The small elements' rows sit kSmallRows after the large ones (as below).
            constexpr long long kSmallRows = kWs.x_small - kWs.x_q;
            const u32 live = (tc.live & 1u) * 16u, r = lane / kChunks, c = lane % kChunks;
            cp_async_16_zfill(tile + Atom::x_chunk_offset(2 * r, c), tc.src[0] + k * kChunkBytes, live);
            cp_async_16_zfill(tile + Atom::x_chunk_offset(2 * r + 1, c), tc.src[0] + kSmallRows + k * kChunkBytes,
                              live);
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
    if (lane == 0) {
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
  __device__ static void scale_decoder(const Ring& ring, Walker walker) {
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

  __device__ static const u8* row_source(const ComputeParams& p, const Workspace& ws, int phase, int route) {
    constexpr long long kPitch = (long long)kHidden * (kChunkBytes / 128);
    if (phase == 0) {
      if constexpr (kRanks > 1) return ep(p.ws).row(route, p.x_rows - p.ws, kPitch);  // the owner rank's rows
      return p.x_rows + u64(token_of(route)) * kPitch;
    }
    return ws.handoff + u64(route) * contract::handoff_row_bytes(kPath, kInter);
  }

  // ----------------------------------------------------------------- consumer
  __device__ static void consumer(const ComputeParams& p, const Ring& ring, Walker walker, const Workspace& ws,
                                  float* s_amax, float* s_reduce, int tag) {
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
  // before this warp releases it).
  template <int N>
  __device__ static void stage_routes(const Ring& ring, const StageCursor<kStages>& cur, int (&route)[N / 4]) {
    const int t = threadIdx.x % 4;
    mbar_wait(&ring.full_x[cur.stage], cur.phase);
#pragma unroll
    for (int i = 0; i < N / 8; ++i)
#pragma unroll
      for (int q = 0; q < 2; ++q) route[2 * i + q] = ring.routes(cur.stage)[8 * i + 2 * t + q];
  }
  template <int N>
  __device__ static void fill(float (&acc)[kT][N / 2], float v) {
#pragma unroll
    for (int u = 0; u < kT; ++u)
#pragma unroll
      for (int i = 0; i < N / 2; ++i) acc[u][i] = v;
  }

  template <int N>
  __device__ static void segment(const ComputeParams& p, const Ring& ring, StageCursor<kStages>& cur,
                                 const Walker& walker, const Segment& sg, const Workspace& ws, float* s_amax,
                                 float* s_reduce, int tag) {
    const int lane = threadIdx.x % 32;
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
      pass_stages(ring, cur, sg.k1 - sg.k0, lane);
    } else if constexpr (kPaired) {
      static_assert(N == 8, "paired rows run 8-column token tiles");
      if (sg.phase != 0)
        Atom::template mainloop<N, kT>(acc, ring, cur, sg.k1 - sg.k0);
      else if (kPaired == contract::kPairedShort && warp_uniform(sg.rows) > contract::kPairedRows)
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

    if constexpr (!kUnits) {
      stream_pieces<N>(p, walker, sg, ws, acc, idle, tag);
      if (sg.k0 > 0) return;  // a later piece: its owner finishes the item
    }
    if (idle) return trace_segment_done(p, sg.phase);
#pragma unroll
    for (int u = 0; u < kT; ++u)
#pragma unroll
      for (int i = 0; i < N / 2; ++i) acc[u][i] *= Atom::kAccScale;
    // A unit's GEMM2 is one K block of the route row: the first block's partial carries the bias.
    if (p.b1 && (!kUnits || sg.phase == 0 || sg.k0 == 0)) add_biases<N>(p, sg, route, acc, threadIdx.x / 128);
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
  template <int N>
  __device__ static void owners_reduce(const float (&both)[2][kT][N / 2], float (&acc)[kT][N / 2], float* red) {
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
  template <int N>
  __device__ static void unit_gemm2(const ComputeParams& p, const Ring& ring, StageCursor<kStages>& cur, Walker& walker,
                                    const Segment& sg, const Workspace& ws) {
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
  template <int N>
  __device__ static void stream_pieces(const ComputeParams& p, const Walker& walker, const Segment& sg,
                                       const Workspace& ws, float (&acc)[kT][N / 2], bool idle, int tag) {
    const int kbs = Shape::kb(sg.phase);
    const int slot = sg.phase * kGrid;
    constexpr int kSlotFloats = int(contract::partial_slot_floats());
    if (sg.k0 > 0) {
      // A later piece of an item: leave the partial sums for its owner.
      float* mine = ws.partials + u64(slot + cta_index()) * kSlotFloats + threadIdx.x * (contract::kMaxTileN / 2);
      if (!idle)
#pragma unroll
        for (int u = 0; u < kT; ++u)
#pragma unroll
          for (int i = 0; i < N / 2; ++i) mine[u * (N / 2) + i] = acc[u][i];
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
        const float* theirs = ws.partials + u64(slot + b) * kSlotFloats + threadIdx.x * (contract::kMaxTileN / 2);
        if (!idle)
#pragma unroll
          for (int u = 0; u < kT; ++u)
#pragma unroll
            for (int i = 0; i < N / 2; ++i) acc[u][i] += ld_cg(theirs + u * (N / 2) + i);
      }
    }
  }

  // The last write wins: the end of this CTA's last GEMM1 segment, and of its last segment.
  __device__ static void trace_segment_done(const ComputeParams& p, int phase) {
    if (threadIdx.x != 0 || !p.trace) return;
    const u64 now = globaltimer();
    if (phase == 0) trace(p, contract::kTraceConsumerPhase1, now);
    trace(p, contract::kTraceConsumerDone, now);
  }

  // The biases (config.biases): GEMM1's b1 on gate and up before the
  // activation; GEMM2's b2 times the route weight, so that the k route rows
  // sum to y = sum_j w_j (W2 act_j + b2).
  template <int N>
  __device__ static void add_biases(const ComputeParams& p, const Segment& sg, const int (&route)[N / 4],
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
  template <int N>
  __device__ static void gemm1_epilogue(const ComputeParams& p, const Segment& sg, const Workspace& ws,
                                        const int (&route)[N / 4], const float (&acc)[kT][N / 2], float* s_amax) {
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
      for (int u = 0; u < kT; ++u)
        red_release_gpu_add(ws.ready + sg.a * kKb2 + (sg.mt * kTiles + group * kT + u) / 4, 1);
  }

  // The w4a8-mx handoff: MXFP8 of the weighted activation per token column over the tile's 32 columns.
  template <int N>
  __device__ static void gemm1_requantize(const Segment& sg, const Workspace& ws, const int (&route)[N / 4],
                                          const float (&acc)[kT][N / 2], float* s_amax, const float (&weight)[N / 4],
                                          float clamp_bf16, float alpha) {
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

  __device__ static void store_handoff(const Workspace& ws, int route, int i, u32 q8, u32 code, bool block_owner) {
    if constexpr (kFp8Rows) {
      ws.handoff[u64(route) * kInter + i] = u8(q8);
      if (!block_owner) return;
      if constexpr (Atom::kF32ScaleRecords)
        reinterpret_cast<float*>(
            ws.handoff_s)[(u64(route) * kKb2 + i / 128) * (contract::kScaleRecordBytes / 4) + (i / 32) % 4] =
            Atom::scale_value(code);
      else
        reinterpret_cast<u8*>(
            ws.handoff_s)[(u64(route) * kKb2 + i / 128) * contract::kScaleRecordBytes + (i / 32) % 4] = u8(code);
    } else {
      handoff_bf16(ws, route, i) = mxfp8_to_bf16(q8, code);
    }
  }
  // Element i of a route's BF16 handoff row (the BF16-row atoms).
  __device__ static u16& handoff_bf16(const Workspace& ws, int route, int i) {
    return reinterpret_cast<u16*>(ws.handoff)[u64(route) * kInter + i];
  }

  // GEMM2's sums by output row: store(route, h, rows h and h + 8) for each of this thread's rows h of the
  // warpgroup's tiles and each of its token columns below sg.rows.
  template <int N, class Store>
  __device__ static void gemm2_rows(const Segment& sg, const int (&route)[N / 4], const float (&acc)[kT][N / 2],
                                    int pair, Store store) {
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
  template <int N>
  __device__ static void gemm2_epilogue(const Segment& sg, const Workspace& ws, const int (&route)[N / 4],
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
  template <int N>
  __device__ static void unit_epilogue(const ComputeParams& p, const Segment& sg, const Workspace& ws,
                                       const int (&route)[N / 4], const float (&acc)[kT][N / 2], int pair) {
    const u64 routed = u64(p.tokens) * kTopK;
    gemm2_rows<N>(sg, route, acc, pair, [&](int r, int h, float lo, float hi) {
      const u64 row = kShared && r >= kSharedRoute0 ? routed + u64(r - kSharedRoute0) : u64(r);
      float* out = ws.partials + (row * kKb2 + u64(sg.k0)) * kHidden;
      out[h] = lo;
      out[h + 8] = hi;
    });
  }

  // --------------------------------------------------------------------- run
  __device__ static void run(const ComputeParams& p) {
    extern __shared__ __align__(1024) u8 smem[];
    if (threadIdx.x == 0) trace(p, contract::kTraceEntry, globaltimer());
    // The 128B swizzle atom needs 1024-byte aligned X tiles, and the schedule the planned grid.
    if (threadIdx.x == 0 && ((smem_addr(smem) & 1023u) != 0 || gridDim.x != kGrid)) __trap();
    const Ring ring{smem + kSmem.x,
                    smem + kSmem.w,
                    reinterpret_cast<u32*>(smem + kSmem.xs),
                    reinterpret_cast<int*>(smem + kSmem.route),
                    reinterpret_cast<u64*>(smem + kSmem.full_w),
                    reinterpret_cast<u64*>(smem + kSmem.full_x),
                    reinterpret_cast<u64*>(smem + kSmem.empty),
                    reinterpret_cast<u64*>(smem + kSmem.decoded),
                    reinterpret_cast<float*>(smem + kSmem.wdec),
                    reinterpret_cast<float*>(smem + kSmem.xdec)};
    int* s_scratch = reinterpret_cast<int*>(smem + kSmem.scratch);
    const Workspace ws = workspace(p.ws);
    if (threadIdx.x == 0) {
      for (int s = 0; s < kStages; ++s) {
        mbar_init(&ring.full_w[s], 1);
        mbar_init(&ring.full_x[s], 32);  // each producer lane, once its copies are issued and route ids stored
        mbar_init(&ring.empty[s], contract::kConsumerWarps * kGroups);
        if (kDecoded) mbar_init(&ring.decoded[s], 32);
      }
      fence_barrier_init();
      const int tag = ws.header->epoch + 1;  // this forward's tag
      s_scratch[63] = tag;
      if constexpr (kRanks > 1) {
        // Every rank's routes and rows of this forward, or none: a rank that never dispatches is reported.
        bool arrived = ws.header->ranks == kRanks;  // else no peer table of this many ranks to read
        if (!arrived) ep_fail(ws.header, contract::kEpWaitSetup, ws.header->rank, ws.header->ranks, false);
        const Ep e = ep(p.ws);
        const u64 start = globaltimer();
        contract::MoeHeader* own = ws.header;
        auto wait_dispatched = [&] {  // every rank's dispatch of this forward, over the link
          for (int s = 0; s < kRanks && arrived; ++s)
            arrived = ep_wait(own, start, contract::kEpWaitDispatch, s,
                              [&](int& seen) { return ep_counter(&e.peer_header(s)->dispatched, tag, seen); });
        };
        if constexpr (kEp & contract::kEpPull) {
          // This rank's dispatch waited for the peers and pulled what this grid reads: a local wait.
          if (arrived)
            arrived = ep_wait(
                own, start, contract::kEpWaitPull, own->rank,
                [&](int& seen) { return ep_counter(&own->pulled, tag, seen); }, 2);
        } else if constexpr (kEp & contract::kEpDirectScan) {
          // One CTA polls the peers; the others wait on the gate it opens in this workspace.
          if (blockIdx.x == 0) {
            wait_dispatched();
            st_release_gpu(&own->gate, tag);  // even after giving up: the others then see the error
          } else if (arrived) {
            arrived = ep_wait(
                own, start, contract::kEpWaitGate, own->rank,
                [&](int& seen) { return ep_counter(&own->gate, tag, seen); }, 2);
          }
        } else {
          wait_dispatched();
        }
        s_scratch[61] = arrived;
      }
    }
    if constexpr (kRanks > 1) __syncthreads();
    int* const active = reinterpret_cast<int*>(smem + kSmem.active);
    int* const count = reinterpret_cast<int*>(smem + kSmem.count);
    int* const tile0 = reinterpret_cast<int*>(smem + kSmem.tile0);
    int* const cost0 = reinterpret_cast<int*>(smem + kSmem.cost0);
    RouteTables tables;
    if (kWarpTables && int(p.tokens) * kTopK + kShared <= 32)
      tables = route_tables_warp<kSlots, kShared, kTileN>(LocalRoutes{p.topk_ids, int(p.tokens) * kTopK}, int(p.tokens),
                                                          s_scratch, active, count, tile0);
    else
      tables = route_tables<kSlots, kShared, kTileN, kThreads, Atom>(
          routes_of(p, kRanks == 1 || s_scratch[61] != 0), int(p.tokens),
          reinterpret_cast<unsigned*>(smem + kSmem.counts), reinterpret_cast<unsigned*>(s_scratch), active, count,
          tile0, cost0);
    Walker::template fill_shares<kThreads>(tables);
    if (threadIdx.x == 0) trace(p, contract::kTraceScheduled, globaltimer());
    const int tag = s_scratch[63];
    const Walker walker(&tables);
    const int warp = warp_uniform(threadIdx.x / 32);
    if (warp == kWeightWarp)
      weight_producer(p, ring, walker);
    else if (warp == kActivationWarp)
      activation_producer(p, ring, walker, ws, tables);
    else if (kDecoded && warp == kDecodeWarp)
      scale_decoder(ring, walker);
    else
      consumer(p, ring, walker, ws, reinterpret_cast<float*>(smem + kSmem.amax),
               reinterpret_cast<float*>(smem + kSmem.reduce), tag);

    // The last CTA out resets the GEMM2 readiness counters and advances the
    // epoch, so the next forward (stream-ordered after this grid) starts clean.
    // (The producer warps ran their loops on lane 0 alone: reconverge them for the aligned barrier.)
    __syncwarp();
    if constexpr (kRanks > 1) __threadfence_system();  // the rows written into other ranks' arenas, before `epoch`
    __syncthreads();
    if (threadIdx.x == 0) {
      __threadfence();
      s_scratch[62] = atomicAdd(&ws.header->done, 1) == kGrid - 1;
    }
    __syncthreads();
    if (s_scratch[62]) {
      __threadfence();
      for (int i = threadIdx.x; i < tables.n_active * kKb2; i += blockDim.x) ws.ready[i] = 0;
      if (threadIdx.x == 0) {
        ws.header->done = 0;
        if constexpr (kRanks > 1)
          st_release_sys(&ws.header->epoch, ws.header->epoch + 1);  // the other ranks' finalize waits for it
        else
          ws.header->epoch = ws.header->epoch + 1;
      }
      __threadfence();
    }
    if (threadIdx.x == 0) trace(p, contract::kTraceExit, globaltimer());
    griddep_launch_dependents();
  }
};

template <int kExperts, int kTopK, int kHidden, int kInter, int kCapacity, int kGroups, int kTiles, int kTileN,
          int kStages, int kGrid, int kActivation, int kShared, int kDecoded = 0, int kSubnormalScales = 1,
          int kRanks = 1, int kEp = 0, int kSchedule = 0, int kPaired = 0>
__device__ void moe_compute_sm90_fp8(const ComputeParams& p) {
  ComputeRole<kExperts, kTopK, kHidden, kInter, kCapacity, kGroups, kTiles, kTileN, kStages, kGrid, kActivation,
              kShared, kDecoded, AtomSm90Fp8<kSubnormalScales != 0>, kRanks, kEp, kSchedule, kPaired>::run(p);
}
template <int kExperts, int kTopK, int kHidden, int kInter, int kCapacity, int kGroups, int kTiles, int kTileN,
          int kStages, int kGrid, int kActivation, int kShared, int kDecoded = 0, int kSubnormalScales = 1,
          int kRanks = 1, int kEp = 0, int kSchedule = 0, int kPaired = 0>
__device__ void moe_compute_sm90_bf16(const ComputeParams& p) {
  ComputeRole<kExperts, kTopK, kHidden, kInter, kCapacity, kGroups, kTiles, kTileN, kStages, kGrid, kActivation,
              kShared, kDecoded, AtomSm90Bf16, kRanks, kEp, kSchedule, kPaired>::run(p);
}
template <int kExperts, int kTopK, int kHidden, int kInter, int kCapacity, int kGroups, int kTiles, int kTileN,
          int kStages, int kGrid, int kActivation, int kShared, int kDecoded = 0, int kSubnormalScales = 1,
          int kRanks = 1, int kEp = 0, int kSchedule = 0, int kPaired = 0>
__device__ void moe_compute_sm90_bf16_w4a16(const ComputeParams& p) {
  ComputeRole<kExperts, kTopK, kHidden, kInter, kCapacity, kGroups, kTiles, kTileN, kStages, kGrid, kActivation,
              kShared, kDecoded, AtomSm90Bf16W4A16, kRanks, kEp, kSchedule, kPaired>::run(p);
}
#if defined(__CUDA_ARCH_FEAT_SM120_ALL) || defined(__CUDA_ARCH_FEAT_SM121_ALL)
template <int kExperts, int kTopK, int kHidden, int kInter, int kCapacity, int kGroups, int kTiles, int kTileN,
          int kStages, int kGrid, int kActivation, int kShared, int kDecoded = 0, int kSubnormalScales = 1,
          int kRanks = 1, int kEp = 0, int kSchedule = 0, int kPaired = 0>
__device__ void moe_compute_sm120(const ComputeParams& p) {
  ComputeRole<kExperts, kTopK, kHidden, kInter, kCapacity, kGroups, kTiles, kTileN, kStages, kGrid, kActivation,
              kShared, kDecoded, AtomSm120, kRanks, kEp, kSchedule, kPaired>::run(p);
}
#endif

}  // namespace moejit
