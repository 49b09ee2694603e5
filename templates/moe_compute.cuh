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
//   and the activation producer warps (kActWarps, taking turns by K128 step:
//        contract::activation_warps): the token rows of the item (gathered by
//        route, 16-byte cp.async into the atom's layout), their scale words and
//        the route ids; a GEMM2 step first waits until the GEMM1 tiles feeding
//        its K128 block of the intermediate have been handed off;
//   and, with decoded scales (kDecoded), the decoder warp: each filled stage's
//        UE8M0 scale words as FP32 for the consumers (scale_decoder).
// The Atom (moe_atom_*.cuh) owns the math: operand reads, the K loop, when a
// stage is released, the handoff format and the accumulator scale.
// This file holds the role's constants, shared helpers and the declarations of
// its warps' functions and of `run`; their definitions are by role in
// moe_compute_producers.cuh, moe_compute_consumer.cuh,
// moe_compute_epilogues.cuh and moe_compute_run.cuh (included at the end).

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

// The kernel's specialization (codegen::moe_compute_spec's constants), one type: the role's member functions are
// defined by role in other files, each under one short template head.
template <int kExperts_, int kTopK_, int kHidden_, int kInter_, int kCapacity_, int kGroups_, int kTiles_, int kTileN_,
          int kStages_, int kGrid_, int kActivation_, int kShared_, int kDecoded_, class Atom_, int kRanks_, int kEp_,
          int kSchedule_, int kPaired_, int kActWarps_, int kWarpTables_>
struct ComputeConfig {
  static constexpr int kExperts = kExperts_, kTopK = kTopK_, kHidden = kHidden_, kInter = kInter_,
                       kCapacity = kCapacity_, kGroups = kGroups_, kTiles = kTiles_, kTileN = kTileN_,
                       kStages = kStages_, kGrid = kGrid_, kActivation = kActivation_, kShared = kShared_,
                       kDecoded = kDecoded_, kRanks = kRanks_, kEp = kEp_, kSchedule = kSchedule_, kPaired = kPaired_,
                       kActWarps = kActWarps_, kWarpTables = kWarpTables_;
  using Atom = Atom_;
};

template <class Config>
struct ComputeRole {
  static constexpr int kExperts = Config::kExperts, kTopK = Config::kTopK, kHidden = Config::kHidden,
                       kInter = Config::kInter, kCapacity = Config::kCapacity, kGroups = Config::kGroups,
                       kTiles = Config::kTiles, kTileN = Config::kTileN, kStages = Config::kStages,
                       kGrid = Config::kGrid, kActivation = Config::kActivation, kShared = Config::kShared,
                       kDecoded = Config::kDecoded, kRanks = Config::kRanks, kEp = Config::kEp,
                       kSchedule = Config::kSchedule, kPaired = Config::kPaired, kActWarps = Config::kActWarps;
  // MoeLaunchPlan::warp_tables: the routing tables by one warp, for steps of at most 32 schedule routes. The
  // kernel holds one builder, with no run-time fallback to the other: both in one kernel moved the B = 2-4 stream
  // kernels' allocation into spills (codegen/plan_schedule.cpp, plan_routing).
  static constexpr bool kWarpTables = Config::kWarpTables != 0;
  using Atom = typename Config::Atom;
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
  static_assert(kActWarps >= 1 && kActWarps <= contract::kMaxActivationWarps, "contract::activation_warps");
  static constexpr int kThreads = contract::compute_threads(kGroups, kDecoded, kActWarps);
  static constexpr int kWeightWarp = kConsumerThreads / 32, kActivationWarp = kWeightWarp + 1,
                       kDecodeWarp = kActivationWarp + kActWarps;
  static_assert(!kDecoded || kPath == contract::kPathSm90Fp8, "decoded scales: the E4M3 wgmma atom's UE8M0 words");
  static constexpr contract::WorkspaceLayout kWs = contract::workspace_layout(kDims);
  static constexpr int kChunkBytes = contract::x_chunk_bytes(kPath);
  static constexpr int kChunks = kChunkBytes / 16;  // cp.async chunks of one token's K128 slice
  static constexpr int kKb2 = kInter / 128;
  static_assert(kKb2 <= 32, "GEMM2 readiness is tracked in a 32-bit mask of K128 blocks");
  using Ring = StageRing<kPath, kTiles, kTileN, kStages, kDecoded != 0>;
  // The token rows of a tile: kTileN, and kPairedRows where every GEMM1 segment is paired (kPairedAll, B <=
  // kPairedRows). An expert draws more routes than B where a router sends a token to it more than once: it then
  // runs more tiles, each paired, where a wider segment would have no loop (the step owners have none but the
  // paired one).
  static constexpr int kTileRows = kPaired == contract::kPairedAll ? contract::kPairedRows : kTileN;
  static constexpr bool kUnits = kSchedule == contract::kScheduleUnits;
  using StreamWalker = SegmentWalker<kSlots, kHidden, kInter, kTiles, kTileRows, kGrid, Atom, kSmem.shares>;
  using Walker = typename SelectType<
      kUnits, UnitWalker<kHidden, kInter, kTiles, kTileRows, kGrid>,
      typename SelectType<kSchedule == contract::kScheduleItems, ItemWalker<kHidden, kInter, kTiles, kTileRows, kGrid>,
                          StreamWalker>::type>::type;
  using Shape = PhaseShape<kHidden, kInter, kTiles>;
  static_assert(kSchedule == contract::kScheduleStream || kSchedule == contract::kScheduleUnits ||
                    kSchedule == contract::kScheduleItems,
                "a schedule");
  static_assert(kSchedule != contract::kScheduleItems || (kRanks == 1 && contract::schedule_items_runs(kPath)),
                "the item schedule: one GPU, the exact path's atoms (contract::schedule_items_runs)");
  static_assert(!kUnits || kRanks == 1, "the unit schedule runs on one GPU: finalize adds its partial rows");
  static_assert(!kWarpTables || kRanks == 1, "the warp's routing tables read one GPU's routes");
  static_assert(!kOwners || (kUnits && kPaired == contract::kPairedAll && !kDecoded),
                "step owners: the unit schedule's fast kernel");
  // kPaired: GEMM1's split rows paired (contract::kPairedRows, MoeLaunchPlan::paired_rows): in every segment, or
  // in those of at most kPairedRows rows (contract::kPairedShort).
  static_assert(kPaired == contract::kPairedNone || kPaired == contract::kPairedAll ||
                    kPaired == contract::kPairedShort,
                "a pairing mode");
  static_assert(!kPaired || (kSplitRows && kRanks == 1), "paired rows: split rows, one GPU");
  static_assert(kPaired != contract::kPairedAll || kTileN == 8, "every segment paired: 8-column token tiles");
  __device__ static bool paired_segment(const Segment& sg) {
    return kPaired && sg.phase == 0 && (kPaired == contract::kPairedAll || sg.rows <= contract::kPairedRows);
  }
  static_assert(StreamWalker::template costs_fit_32_bits<(kRanks * kCapacity * kTopK + kTileRows - 1) / kTileRows>(),
                "the schedule's cost into one expert fits 32 bits");
  static_assert(contract::last_item_runs(kPath, kGroups, kTiles, Shape::rest(0)) &&
                    contract::last_item_runs(kPath, kGroups, kTiles, Shape::rest(1)),
                "a token tile's last item is one the role runs");
  static_assert(contract::compute_smem_valid(kPath, kGroups, kTiles, kTileN, kStages, kSlots), "compute SMEM layout");
  static_assert(kSlots < 4096, "the routing prologue packs active indices in 12 bits");
  static_assert(kShared == 0 || kShared == 1, "one fused shared expert at most");
  static_assert(kRanks == 1 || kShared == 0, "expert parallelism runs routed experts only");
  // The GEMM1 epilogue reads a token's frame from this rank's x_scales (frame_sums).
  static_assert(!Atom::kTokenFrame || kRanks == 1, "the token frame runs on one GPU");
  // Expert parallelism (kRanks > 1): every rank's routes that reach this rank's experts (moe_ep.cuh).
  using Ep = EpRoutes<kExperts, kTopK, kCapacity, kRanks,
                      EpLayout<kExperts, kTopK, kHidden, kInter, kCapacity, kPath, kShared, kRanks, kEp>>;
  static_assert(kRanks > 1 || kEp == 0, "the EpMode bits are expert parallelism's");
  static_assert(contract::path_cost_weighted(kPath) == !uniform_step_cost<Atom>(),
                "the SMEM layout holds the share table exactly when the atom's step costs differ");

  // GEMM1's sums come out of the K-loop in each token's frame (the atom's kTokenFrame): not another branch in
  // kernels without one.
  __device__ static bool frame_sums(const Segment& sg) {
    if constexpr (Atom::kTokenFrame) return sg.phase == 0;
    return false;
  }
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

  // ------------------------------------------- producers (moe_compute_producers.cuh)
  __device__ static void weight_producer(const ComputeParams& p, const Ring& ring, Walker walker);

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

  __device__ static void tile_copies(TileCopies& tc, const ComputeParams& p, const Workspace& ws, const Segment& sg);

  // Activation warp `w` of kActWarps: the stages of steps w, w + kActWarps, ... (contract::activation_warps).
  __device__ static void activation_producer(const ComputeParams& p, const Ring& ring, Walker walker,
                                             const Workspace& ws, const RouteTables& t, int w);

  __device__ static void scale_decoder(const Ring& ring, Walker walker);

  __device__ static const u8* row_source(const ComputeParams& p, const Workspace& ws, int phase, int route);

  // --------------------------------------------- consumer (moe_compute_consumer.cuh)
  __device__ static void consumer(const ComputeParams& p, const Ring& ring, Walker walker, const Workspace& ws,
                                  float* s_amax, float* s_reduce, int tag);

  template <int N>
  __device__ static void stage_routes(const Ring& ring, const StageCursor<kStages>& cur, int (&route)[N / 4]);
  template <int N>
  __device__ static void fill(float (&acc)[kT][N / 2], float v);

  template <int N>
  __device__ static void segment(const ComputeParams& p, const Ring& ring, StageCursor<kStages>& cur,
                                 const Walker& walker, const Segment& sg, const Workspace& ws, float* s_amax,
                                 float* s_reduce, int tag);

  template <int N>
  __device__ static void owners_reduce(const float (&both)[2][kT][N / 2], float (&acc)[kT][N / 2], float* red);

  template <int N>
  __device__ static void unit_gemm2(const ComputeParams& p, const Ring& ring, StageCursor<kStages>& cur, Walker& walker,
                                    const Segment& sg, const Workspace& ws);

  // This thread's granule 0 in a split-K slot (contract::partial_granule; its granule g is
  // partial_granule(g, 0, kConsumerThreads) further, a compile-time offset).
  static_assert(contract::kMaxTileN / 2 * kConsumerThreads <= contract::partial_slot_floats(), "partial granules");
  __device__ static float4* partial_granules(const Workspace& ws, int slot) {
    return reinterpret_cast<float4*>(ws.partials + u64(slot) * contract::partial_slot_floats()) + threadIdx.x;
  }

  template <int N>
  __device__ static void stream_pieces(const ComputeParams& p, const Walker& walker, const Segment& sg,
                                       const Workspace& ws, float (&acc)[kT][N / 2], bool idle, int tag);

  __device__ static void trace_segment_done(const ComputeParams& p, int phase);

  // ------------------------------------------- epilogues (moe_compute_epilogues.cuh)
  template <int N>
  __device__ static void add_biases(const ComputeParams& p, const Segment& sg, const int (&route)[N / 4],
                                    float (&acc)[kT][N / 2], int pair);

  template <int N>
  __device__ static void gemm1_epilogue(const ComputeParams& p, const Segment& sg, const Workspace& ws,
                                        const int (&route)[N / 4], const float (&acc)[kT][N / 2], float* s_amax);

  template <int N>
  __device__ static void gemm1_requantize(const Segment& sg, const Workspace& ws, const int (&route)[N / 4],
                                          const float (&acc)[kT][N / 2], float* s_amax, const float (&weight)[N / 4],
                                          float clamp_bf16, float alpha);

  __device__ static void store_handoff(const Workspace& ws, int route, int i, u32 q8, u32 code, bool block_owner);
  __device__ static u16& handoff_bf16(const Workspace& ws, int route, int i);

  template <int N, class Store>
  __device__ static void gemm2_rows(const Segment& sg, const int (&route)[N / 4], const float (&acc)[kT][N / 2],
                                    int pair, Store store);

  template <int N>
  __device__ static void gemm2_epilogue(const Segment& sg, const Workspace& ws, const int (&route)[N / 4],
                                        const float (&acc)[kT][N / 2]);

  template <int N>
  __device__ static void unit_epilogue(const ComputeParams& p, const Segment& sg, const Workspace& ws,
                                       const int (&route)[N / 4], const float (&acc)[kT][N / 2], int pair);

  // --------------------------------------------------------------------- run (moe_compute_run.cuh)
  __device__ static void run(const ComputeParams& p);
};

}  // namespace moejit

#include "moe_compute_consumer.cuh"
#include "moe_compute_epilogues.cuh"
#include "moe_compute_producers.cuh"
#include "moe_compute_run.cuh"

namespace moejit {

template <int kExperts, int kTopK, int kHidden, int kInter, int kCapacity, int kGroups, int kTiles, int kTileN,
          int kStages, int kGrid, int kActivation, int kShared, int kDecoded = 0, int kSubnormalScales = 1,
          int kRanks = 1, int kEp = 0, int kSchedule = 0, int kPaired = 0, int kActWarps = 1, int kTokenFrame = 0,
          int kWarpTables = 0>
__device__ void moe_compute_sm90_fp8(const ComputeParams& p) {
  ComputeRole<ComputeConfig<kExperts, kTopK, kHidden, kInter, kCapacity, kGroups, kTiles, kTileN, kStages, kGrid,
                            kActivation, kShared, kDecoded, AtomSm90Fp8<kSubnormalScales != 0, kTokenFrame != 0>,
                            kRanks, kEp, kSchedule, kPaired, kActWarps, kWarpTables>>::run(p);
}
template <int kExperts, int kTopK, int kHidden, int kInter, int kCapacity, int kGroups, int kTiles, int kTileN,
          int kStages, int kGrid, int kActivation, int kShared, int kDecoded = 0, int kSubnormalScales = 1,
          int kRanks = 1, int kEp = 0, int kSchedule = 0, int kPaired = 0, int kActWarps = 1, int kTokenFrame = 0,
          int kWarpTables = 0>
__device__ void moe_compute_sm90_bf16(const ComputeParams& p) {
  ComputeRole<
      ComputeConfig<kExperts, kTopK, kHidden, kInter, kCapacity, kGroups, kTiles, kTileN, kStages, kGrid, kActivation,
                    kShared, kDecoded, AtomSm90Bf16, kRanks, kEp, kSchedule, kPaired, kActWarps, kWarpTables>>::run(p);
}
template <int kExperts, int kTopK, int kHidden, int kInter, int kCapacity, int kGroups, int kTiles, int kTileN,
          int kStages, int kGrid, int kActivation, int kShared, int kDecoded = 0, int kSubnormalScales = 1,
          int kRanks = 1, int kEp = 0, int kSchedule = 0, int kPaired = 0, int kActWarps = 1, int kTokenFrame = 0,
          int kWarpTables = 0>
__device__ void moe_compute_sm90_bf16_w4a16(const ComputeParams& p) {
  ComputeRole<ComputeConfig<kExperts, kTopK, kHidden, kInter, kCapacity, kGroups, kTiles, kTileN, kStages, kGrid,
                            kActivation, kShared, kDecoded, AtomSm90Bf16W4A16, kRanks, kEp, kSchedule, kPaired,
                            kActWarps, kWarpTables>>::run(p);
}
#if defined(__CUDA_ARCH_FEAT_SM120_ALL) || defined(__CUDA_ARCH_FEAT_SM121_ALL)
template <int kExperts, int kTopK, int kHidden, int kInter, int kCapacity, int kGroups, int kTiles, int kTileN,
          int kStages, int kGrid, int kActivation, int kShared, int kDecoded = 0, int kSubnormalScales = 1,
          int kRanks = 1, int kEp = 0, int kSchedule = 0, int kPaired = 0, int kActWarps = 1, int kTokenFrame = 0,
          int kWarpTables = 0>
__device__ void moe_compute_sm120(const ComputeParams& p) {
  ComputeRole<
      ComputeConfig<kExperts, kTopK, kHidden, kInter, kCapacity, kGroups, kTiles, kTileN, kStages, kGrid, kActivation,
                    kShared, kDecoded, AtomSm120, kRanks, kEp, kSchedule, kPaired, kActWarps, kWarpTables>>::run(p);
}
#endif

}  // namespace moejit
