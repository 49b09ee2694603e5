#pragma once
// The host/device contract of the MoE role kernels, written once: the MMA
// paths, the weight step blob, the workspace layout and the compute role's
// shared-memory layout. The host includes this file as C++ (codegen sizes
// launches and the runtime carves the workspace from it); NVRTC includes it
// from the templates, whose entries static_assert that the SMEM size, thread
// count and workspace size the host planned are what this file computes.
//
// Plain integer arithmetic only: no headers (NVRTC has none), no device types.

#if defined(__CUDACC__)
#define MOEJIT_HD __host__ __device__
#else
#define MOEJIT_HD
#endif

namespace moejit {
namespace contract {

// The MMA atom of the compute role. Each atom fixes the weight fragment
// order inside a step blob, the staged activation format and the handoff.
enum MmaPath : int {
  kPathSm90Bf16 = 0,  // exact: E2M1 -> BF16 with the scale folded in, mma.sync bf16 (moe_atom_sm90_bf16.cuh)
  kPathSm90Fp8 = 1,   // fast: E2M1 -> E4M3 by bit placement, wgmma e4m3, FP32 scaling per K32 (moe_atom_sm90_fp8.cuh)
  kPathSm120 = 2,     // native block-scaled mma.sync kind::mxf8f6f4 (moe_atom_sm120.cuh)
};

// Whether the path stages activations as E4M3 + UE8M0 scale words (else as
// their exact BF16 image).
MOEJIT_HD constexpr bool path_fp8_rows(int path) {
  return path != kPathSm90Bf16;
}

// Whether GEMM1 reads each activation row as two E4M3 rows, its large and its
// small elements (every byte is in exactly one; the other holds +0), summed
// into separate K32 partials (one wgmma reads both: x_stage_bytes). Hopper's
// FP8 tensor core aligns a K32 block's products to the largest and keeps about
// 13 fractional bits: a product ~7 octaves below the largest loses bits, and
// GEMM1's error flips MXFP8 requantization choices of the handoff
// (docs/numerics.md). With the split, every product of the large row is exact
// and the small row's error is relative to its own, 2^kSplitOctaves smaller,
// maximum.
MOEJIT_HD constexpr bool path_split_rows(int path) {
  return path == kPathSm90Fp8;
}
// Paired split rows (GEMM1 wherever a segment has at most kPairedRows rows: the planner pairs at B <= kPairedRows,
// MoeLaunchPlan::paired_rows): token r's large row at column 2r and its small row at 2r + 1 of one 8-column tile. One
// wgmma of 8 columns then covers both (not one of 16), and a thread's two columns are one token's: it adds them and
// scales the sum once, half the FP32 promotion of 16 columns. A column's K32 sum holds its own products only, and the
// FP32 operations are the 16-column split's, in its order.
constexpr int kPairedRows = 4;
// The compute kernel's kPaired: no pairing; every GEMM1 segment paired (B <= kPairedRows: its token tiles hold
// kPairedRows rows, so a token routed to one expert more than once makes more tiles, never a wider segment); or
// the segments of at most kPairedRows rows paired and the others split on 16 columns (B <= 8, 8-column token tiles).
constexpr int kPairedNone = 0, kPairedAll = 1, kPairedShort = 2;
// The large row holds the elements of magnitude >= 2^4 (E4M3 magnitude code
// 0x58), the small row the rest. An MX block's scale puts its amax in
// [256, 448], so the large row spans at most 4.8 octaves, and with E2M1
// weights (0.5..6) its products 8.4 octaves of 6-bit significands: within 13
// bits of the largest. x_q that is not MX-normalized stays correct (the rows
// still sum to x), only less precise.
constexpr int kSplitOctaves = 4;
constexpr unsigned kSplitCode = 0x78u - 8u * kSplitOctaves;

// Compute role: an item is `tiles` 64-row weight tiles; `groups` consumer
// warpgroups each own tiles / groups of them (warp w of a group the M16
// slice w of each), then a weight producer warp and the activation producer
// warps. More tiles per warpgroup share one activation scale decode and one
// barrier round among more weights.
constexpr int kConsumerWarps = 4;  // per group
constexpr int kMaxGroups = 3;
MOEJIT_HD constexpr int consumer_threads(int groups) {
  return 32 * kConsumerWarps * groups;
}
// `decoded`: a warp after the weight and activation producers decodes each stage's UE8M0 scale words to FP32
// (compute_smem_layout's wdec / xdec), so the consumers' loops do not.
// (No setmaxnreg split between producers and consumers: nvJitLink compiles
// PTX as relocatable code, where ptxas drops setmaxnreg without a word. Three
// consumer warpgroups and the producer warps launch with 128 registers each.)
// A completed release of step m implies the releases of every step up to m - release_lag: the step owners free
// their own step after the two they pass (AtomSm90Fp8::kloop_owned), so steps m - 1 and m - 2 may still be held
// when m's release completes; every other consumer frees its steps in order.
MOEJIT_HD constexpr int release_lag(bool owners) {
  return owners ? 3 : 0;
}
// Whether act_warps activation warps can take turns on a ring of `stages`, each waiting for its own steps'
// releases only. Warp w's parity wait for step n (the release of n - stages) is right when the release of
// n - 2 stages has completed: it knows that from its wait for its previous step, n - act_warps (the release of
// n - act_warps - stages implies everything up to release_lag before it), or, where stages is a multiple of
// act_warps, from its own wait for step n - stages itself.
MOEJIT_HD constexpr bool activation_warps_fit(int act_warps, int stages, bool owners) {
  return act_warps + release_lag(owners) <= stages || stages % act_warps == 0;
}
// The most warps one of an SM's 4 schedulers holds for `ctas` CTAs of `threads`: its 16384 registers are split
// over them, so this sets the register cap (codegen's register_cap_for).
MOEJIT_HD constexpr int scheduler_warps(int ctas, int threads) {
  return (ctas * threads / 32 + 3) / 4;
}
// act_warps: the activation producer's warps (activation_warps, or 1 .. kMaxActivationWarps as set).
constexpr int kMaxActivationWarps = 4;
MOEJIT_HD constexpr int compute_threads(int groups, bool decoded, int act_warps) {
  return consumer_threads(groups) + 32 * (1 + act_warps) + (decoded ? 32 : 0);
}
// The activation producer's warps: one, plus as many more per CTA as leave the most warps on any of an SM's 4
// schedulers unchanged, so they cost no registers (a scheduler's 16384 are split over its warps: one CTA of 3
// consumer warpgroups and 2 producer warps is 14 warps, 4 on some scheduler either way, so 16 keep 128 registers
// each). Warp w of them fills the stages of steps w, w + a, w + 2a, ... (a = activation_warps): one warp's stage,
// its gathered rows and scale records, issued by dependent instructions, took longer than the step owners' 4-tile
// K128 step at B = 1 (ncu: the consumers waited on full_x a third of their time,
// bench/results/2026-12-04-h200-activation-warps.md).
MOEJIT_HD constexpr int activation_warps(int groups, bool decoded, int ctas) {
  const int most = scheduler_warps(ctas, compute_threads(groups, decoded, 1));
  int a = 1;
  while (a < kMaxActivationWarps && scheduler_warps(ctas, compute_threads(groups, decoded, a + 1)) == most) ++a;
  return a;
}

// One weight step: 64 rows x K128 of E2M1 codes in the atom's fragment order
// (4096 B), then the 64 rows' UE8M0 scale words (byte j = K32 block j).
// Packed projections are [E][N/128][K/128][2] step blobs: the two 64-row
// tiles of a 128-row pair sit side by side for each K128 block, so a
// two-group item loads both with one copy and a one-group item streams
// 4 KiB runs.
constexpr int kWeightTileRows = 64;
constexpr int kWeightPayloadBytes = 4096;
constexpr int kWeightStepBytes = kWeightPayloadBytes + 4 * kWeightTileRows;
MOEJIT_HD constexpr long long weight_step_offset(int expert, int mt, int kb, int n_rows, int k) {
  return (((long long)expert * (n_rows / 128) + mt / 2) * (k / 128) + kb) * 2 * kWeightStepBytes +
         (long long)(mt % 2) * kWeightStepBytes;
}
// The inverse: which (expert, 64-row tile, K128 block) the step at `index`
// (memory order, in units of kWeightStepBytes) holds.
struct WeightStep {
  int expert, mt, kb;
};
MOEJIT_HD constexpr WeightStep weight_step_at(long long index, int n_rows, int k) {
  const long long blocks = k / 128, pairs = n_rows / 128;
  const int half = int(index % 2), kb = int((index / 2) % blocks), pair = int((index / (2 * blocks)) % pairs);
  return {int(index / (2 * blocks * pairs)), 2 * pair + half, kb};
}
// The compute role loads weight steps with TMA over the packed bytes viewed as
// rows of 256 bytes: a step is kWeightStepBytes / 256 = 17 rows, and one box
// is a step or a pair's two adjacent steps (34 rows); an item of `tiles` steps
// per K128 block loads max(1, tiles / 2) boxes. A row is one L2 promotion
// unit (CU_TENSOR_MAP_L2_PROMOTION_L2_256B): with 64-byte rows the L2 saw
// four requests per promoted line, 1.8x the requests (ncu, GLM5.2 B = 32),
// and the layer ran 1-2 points of the floor slower at every B.
constexpr int kWeightMapRowBytes = 256;
MOEJIT_HD constexpr int weight_box_rows(int tiles) {
  return (tiles >= 2 ? 2 : 1) * kWeightStepBytes / kWeightMapRowBytes;
}

MOEJIT_HD constexpr long long align_up(long long v, long long a) {
  return (v + a - 1) / a * a;
}

// Bytes of one token's K128 slice as the atom stages it, and the SMEM row
// pitch it lands in. fp8 atoms: 128 E4M3 bytes (sm_90a: 128B-swizzled rows
// for wgmma; sm_120a: 144-byte padded rows for ldmatrix). bf16: the 256-byte
// BF16 image in 272-byte padded rows.
MOEJIT_HD constexpr int x_chunk_bytes(int path) {
  return path_fp8_rows(path) ? 128 : 256;
}
MOEJIT_HD constexpr int x_row_pitch(int path) {
  return path == kPathSm90Fp8 ? 128 : x_chunk_bytes(path) + 16;
}
// A GEMM2 activation row (the GEMM1 handoff) of one route: E4M3 act (I bytes)
// and its UE8M0 scale words (I/128 words), or the BF16 image (2I bytes).
MOEJIT_HD constexpr long long handoff_row_bytes(int path, int inter) {
  return path_fp8_rows(path) ? inter : 2LL * inter;
}

// Expert parallelism: R ranks, each its own workspace; the kernels reach the
// others' through the header's peer table (rank -> the base of its workspace as
// this GPU addresses it), whoever filled it (partitions of one GPU, NCCL, or
// the caller).
constexpr int kMaxRanks = 32;

// What a bounded cross-rank wait reports when it gives up (MoeHeader::error).
enum EpWait : int {
  kEpWaitNone = 0,
  kEpWaitDispatch = 1,  // compute: a rank's `dispatched` never reached this forward (its dispatch did not run)
  kEpWaitCompute = 2,   // finalize: a rank's `epoch` never reached this forward (its compute did not finish)
  kEpWaitPieces = 3,    // compute: its own grid's split-K pieces or GEMM2 inputs (after another CTA gave up)
  kEpWaitSkew = 4,      // a rank's counter is past this forward's: the ranks ran different numbers of forwards
  kEpWaitPeer = 5,      // another rank (error_rank) gave up on this forward (error_value: its EpWait)
  kEpWaitSetup = 6,     // the workspace is not set up for the kernel's ranks (error_value: the header's ranks)
  kEpWaitPull = 7,      // compute: this rank's dispatch never finished pulling the peers' rows (kEpPull)
  kEpWaitGate = 8,      // compute: the CTA that scans the peers never opened this rank's gate (kEpDirectScan)
  // Claimed, its rank and value still being written (ep_fail): the word holds this for microseconds, then the
  // cause. Nonzero, so every wait that reads it gives up as for any error.
  kEpWaitClaimed = -1,
};

// The planner's expert-parallel decisions (MoeLaunchPlan::ep), as the bits of
// MoeDims::ep every role kernel is specialized on (docs/expert-parallelism.md).
// kEpMirror and kEpPull are alternatives: both make the compute role's route
// metadata local, one by the senders' pushes (k < R), the other by the
// receiver's pulls, which also bring each needed peer row once (k >= R).
enum EpMode : int {
  kEpMirror = 1,         // dispatch pushes its routes, route weights and x scale words into every rank's mirror
  kEpPull = 2,           // dispatch pulls all ranks' routes, and once per (rank, token) the rows its experts read
  kEpStagedReturns = 4,  // compute keeps output rows in its own relay arena; each owner's finalize reads them
  kEpDirectScan = 8,     // one compute CTA polls the peers and opens a local gate for the others
  kEpModes = 16,
  kEpLayoutModes = kEpMirror | kEpPull | kEpStagedReturns,  // the bits that add workspace regions
};

// The workspace header. `epoch` counts the forwards that finished on this
// workspace (the last compute CTA of a forward bumps it), so a forward tags its
// partial sums with epoch + 1 and no flag needs a reset. `done` counts the
// compute CTAs that finished this forward. The rest is expert parallelism's
// (zero and unused with one rank): `dispatched` is the forward (epoch + 1) whose
// x rows, routes and token count this rank's dispatch role has published,
// `dispatch_done` its CTAs that finished; `rank`, `ranks`, `timeout_ns` and
// `peers` are the host's (MoeLayer::init_rank_workspace); `error` (EpWait),
// `error_rank` and `error_value` the first wait that gave up, kept until the
// host reads them; `pulled`, `pull_done` and `gate` those of the EpMode bits.
struct MoeHeader {
  int epoch;
  int done;
  int dispatched;
  int dispatch_done;
  int tokens;
  int rank;
  int ranks;
  int error;
  int error_rank;
  int error_value;
  int pulled;     // kEpPull: the forward whose peer rows this rank's dispatch has pulled
  int pull_done;  // kEpPull: dispatch CTAs done pulling
  int gate;       // kEpDirectScan: the forward whose peers the scanning compute CTA has seen dispatch
  long long timeout_ns;
  unsigned long long peers[kMaxRanks];
};

// The compute role's trace (ComputeParams::trace, null unless a profiler asks,
// e.g. `moejit_bench_moe --trace`): per CTA, kTraceSlots u64 at
// trace[blockIdx.x * kTraceSlots + slot]. Times are %globaltimer (ns); the
// *_wait slots are nanoseconds spent in that wait, summed over the kernel.
enum TraceSlot : int {
  kTraceEntry,             // thread 0, first instruction
  kTraceScheduled,         // thread 0, routing tables and shares derived
  kTraceWeightFirst,       // weight producer, first copy issued
  kTraceWeightPhase1,      // weight producer, first GEMM2 copy issued (0: none)
  kTraceWeightLast,        // weight producer, last copy issued
  kTraceWeightWait,        // weight producer, waiting for a free stage (all loading or being read)
  kTraceActStart,          // activation warp 0, past griddepcontrol.wait
  kTraceActReadyWait,      // activation warp 0, waiting for GEMM2 inputs to be handed off (its own steps)
  kTraceActWait,           // activation warp 0, waiting for a free stage (its own steps)
  kTraceConsumerPhase1,    // consumer thread 0, GEMM1 share done (epilogues included)
  kTraceConsumerFlagWait,  // consumer thread 0, owners waiting for their split-K pieces (added to)
  kTraceConsumerDone,      // consumer thread 0, last segment done
  kTraceExit,              // thread 0, after the epoch bookkeeping
  kTraceSteps0,            // K128 steps of GEMM1 this CTA streamed (a count)
  kTraceSteps1,            // K128 steps of GEMM2
  kTraceActRoutes,         // activation warp 0, finding the routes of its token tiles (ns)
  kTraceSlots = 16
};

// A staged activation scale word travels in a 16-byte record (word 0): GEMM2's
// come from the handoff other SMs wrote during this forward, and only 16-byte
// cp.async (.cg) skips the L1, whose stale copy of a neighbour's record would
// otherwise be read.
constexpr int kScaleRecordBytes = 16;

// The dimensions the workspace depends on (E local experts, Bcap token capacity,
// shared: 1 with a fused shared expert). The shared expert is expert E of the
// packed weights, and token t's route to it is kSharedRoute0 + t
// (shared_route0): every token gets one more route, with weight 1.
struct MoeDims {
  int experts, top_k, hidden, inter, capacity, path, shared;
  int ranks = 1;  // expert parallelism: `experts` is then each rank's E / R
  int ep = 0;     // EpMode bits (ranks > 1)
};
MOEJIT_HD constexpr long long shared_route0(MoeDims d) {
  return (long long)d.capacity * d.top_k;
}
// The routes the workspace holds rows for: Bcap * k routed, then Bcap shared.
MOEJIT_HD constexpr long long route_capacity(MoeDims d) {
  return (long long)d.capacity * (d.top_k + d.shared);
}

// The routes this rank's compute role runs (its handoff rows): with R ranks,
// route t * k + j of rank s's tokens is s * Bcap * k + t * k + j (ep_route);
// with one, the workspace's routes.
MOEJIT_HD constexpr long long compute_route_capacity(MoeDims d) {
  return d.ranks > 1 ? (long long)d.ranks * d.capacity * d.top_k : route_capacity(d);
}
// The widest token tile (wgmma N) a compute item uses; split-K partial slots
// are sized for it, so one workspace serves every batch size.
constexpr int kMaxTileN = 64;

// The workspace: one flat allocation per stream. Regions are 256-byte
// aligned. Everything before `partials` is independent of the grid, so a
// kernel finds every region from its compile-time constants and the last one
// from gridDim.
struct WorkspaceLayout {
  long long header;         // MoeHeader
  long long ready;          // int [E + shared][I/128]: finished GEMM1 tiles per (active expert, K128 block of I)
  long long x_q;            // u8  [Bcap][H]: E4M3 activations quantized from BF16 input by the dispatch role
  long long x_scales;       // u32 [Bcap][H/128]
  long long x_small;        // u8  [Bcap][H]: split rows (path_split_rows): the small elements; x_q holds the large
  long long x_bf16;         // u16 [Bcap][H]: the exact path's BF16 image of x
  long long handoff;        // [routes] rows of handoff_row_bytes: GEMM2 activations, by route r (route_capacity)
  long long handoff_s;      // [routes][I/128] 16-byte records, word 0 the UE8M0 scale word (fp8 paths)
  long long arena;          // u16 [routes][H]: each route's BF16 output row (with R ranks, written by its owner)
  long long route_ids;      // R > 1: i32 [Bcap][k], this rank's topk_ids as the dispatch role published them
  long long route_weights;  // R > 1: f32 [Bcap][k], its topk_weights
  // The EpMode regions (0 bytes without their bit). Rank s's span of the mirror is rows s * Bcap ... .
  long long ep_tokens;     // kEpMirror | kEpPull: i32 [R], every rank's token count
  long long ep_ids;        // kEpMirror | kEpPull: i32 [R][Bcap][k], every rank's topk_ids
  long long ep_weights;    // kEpMirror | kEpPull: f32 [R][Bcap][k]
  long long ep_scales;     // kEpMirror, fp8 rows: u32 [R][Bcap][H/128], every rank's x scale words
  long long ep_rows;       // kEpPull: [R] copies of the x regions (x_q ... handoff), rank s's rows as on rank s
  long long ep_relay;      // kEpStagedReturns: u16 [R][Bcap][k][H], output rows by EpRoutes' route index
  long long partial_flag;  // int [2][grid]: tag of the forward whose partial sits in the slot
  long long partials;      // float [2][grid][partial_slot_floats()]: split-K partial sums
  long long fixed_bytes;   // bytes before `partials`
};

// One consumer thread's accumulators of its tiles (tiles / groups * tile_n / 2 <= kMaxTileN / 2), for every
// consumer thread.
MOEJIT_HD constexpr long long partial_slot_floats() {
  return (long long)consumer_threads(kMaxGroups) * kMaxTileN / 2;
}

MOEJIT_HD constexpr WorkspaceLayout workspace_layout(MoeDims d) {
  WorkspaceLayout l{};
  long long at = 0;
  const long long routes = route_capacity(d);
  const bool fp8 = path_fp8_rows(d.path);
  l.header = at, at += align_up(sizeof(MoeHeader), 256);
  l.ready = at, at += align_up(4LL * (d.experts + d.shared) * (d.inter / 128), 256);
  l.x_q = at, at += align_up((long long)d.capacity * d.hidden, 256);
  l.x_scales = at, at += align_up(4LL * d.capacity * (d.hidden / 128), 256);
  l.x_small = at, at += path_split_rows(d.path) ? align_up((long long)d.capacity * d.hidden, 256) : 0;
  l.x_bf16 = at, at += fp8 ? 0 : align_up(2LL * d.capacity * d.hidden, 256);
  const long long computed = compute_route_capacity(d);
  l.handoff = at, at += align_up(computed * handoff_row_bytes(d.path, d.inter), 256);
  l.handoff_s = at, at += fp8 ? align_up(kScaleRecordBytes * computed * (d.inter / 128), 256) : 0;
  l.arena = at, at += align_up(2 * routes * d.hidden, 256);
  const long long published = d.ranks > 1 ? (long long)d.capacity * d.top_k : 0;
  l.route_ids = at, at += align_up(4 * published, 256);
  l.route_weights = at, at += align_up(4 * published, 256);
  const bool ep = d.ranks > 1, metadata = ep && (d.ep & (kEpMirror | kEpPull));
  const long long spans = ep ? (long long)d.ranks * d.capacity : 0;  // every rank's tokens
  l.ep_tokens = at, at += metadata ? align_up(4LL * d.ranks, 256) : 0;
  l.ep_ids = at, at += metadata ? align_up(4 * spans * d.top_k, 256) : 0;
  l.ep_weights = at, at += metadata ? align_up(4 * spans * d.top_k, 256) : 0;
  l.ep_scales = at, at += ep && (d.ep & kEpMirror) && fp8 ? align_up(4 * spans * (d.hidden / 128), 256) : 0;
  l.ep_rows = at, at += ep && (d.ep & kEpPull) ? d.ranks * (l.handoff - l.x_q) : 0;
  l.ep_relay = at, at += ep && (d.ep & kEpStagedReturns) ? align_up(2 * spans * d.top_k * d.hidden, 256) : 0;
  l.partial_flag = at, at += 0;  // sized by the grid, below
  l.partials = 0;
  l.fixed_bytes = at;
  return l;
}

// The grid-dependent tail: flags, then partial slots (16-byte aligned).
MOEJIT_HD constexpr long long partials_offset(MoeDims d, int grid) {
  return workspace_layout(d).fixed_bytes + align_up(4LL * 2 * grid, 256);
}

// The compute role's schedules (codegen::Schedule):
//  - stream: GEMM1 then GEMM2, each phase's K128 steps split evenly over the
//    CTAs (stream-K); a GEMM2 step waits for the GEMM1 tiles of its K block,
//    whichever CTAs ran them.
//  - units (small B): a unit is (active expert, K128 block s of I): GEMM1 of
//    the 4 tiles of block s, then GEMM2's K block s over all of H. A unit's
//    GEMM2 reads only its own GEMM1 rows, so no CTA waits for another; each
//    unit leaves FP32 partial rows and finalize adds an expert's I/128 of them.
constexpr int kScheduleStream = 0, kScheduleUnits = 1;
constexpr int kUnitTiles = 4;  // a unit's GEMM1 item: the 64-row tiles of 128 intermediate columns
// Step owners: the unit schedule on three consumer warpgroups, whose items of kUnitTiles tiles do not split three
// ways. Warpgroup w instead owns the steps k = w (mod 3) of a segment and runs each over all the item's tiles,
// kOwnedTiles at a time (a pair: the two-warpgroup unit kernel's K-loop per warpgroup); every warpgroup still
// waits for and releases every stage, so the ring's phases are the same for all. GEMM1's sums of pair p are then
// added in shared memory (ComputeSmemLayout::reduce) into warpgroup p, which runs the pair's epilogue. Three
// warpgroups hide the latency of the K-loop that two leave bare at B = 1
// (bench/results/2026-12-04-h200-clock-and-step-weights.md).
constexpr int kOwnedTiles = 2;
MOEJIT_HD constexpr bool step_owners(int groups, int tiles) {
  return groups == 3 && tiles == kUnitTiles;
}
// The 64-row tiles a consumer warpgroup computes at a time.
MOEJIT_HD constexpr int tiles_per_group(int groups, int tiles) {
  return step_owners(groups, tiles) ? kOwnedTiles : tiles / groups;
}
// The owners' GEMM1 reduction: float [pair 2][source 2][kOwnedTiles][tile_n / 2][128 threads]; source 0 is the
// pair's other owner (warpgroup 1 - p), source 1 warpgroup 2.
MOEJIT_HD constexpr int owner_reduce_bytes(int groups, int tiles, int tile_n) {
  return step_owners(groups, tiles) ? 4 * 2 * 2 * kOwnedTiles * (tile_n / 2) * 128 : 0;
}
// The unit schedule's partial rows: float [B (k + shared)][I/128][H], route t k + j at row t k + j, the shared
// route of token t at B k + t. They take the split-K slots' bytes (partials_offset), which this schedule leaves
// unused, so the workspace is the same for every schedule and batch (workspace_bytes).
MOEJIT_HD constexpr long long unit_partial_bytes(MoeDims d, long long tokens) {
  return 4LL * tokens * (d.top_k + d.shared) * (d.inter / 128) * d.hidden;
}
// The tail holds the unit rows of up to kUnitTokens tokens where a layer can run the schedule: within the split-K
// slots of 132 CTAs for the built-in models (GLM5.2: 12.6 of 13.0 MB; +1.2 MB with its shared expert), since
// the tail is allocated per layer and stream and the schedule is planned at B = 1.
constexpr int kUnitTokens = 4;
MOEJIT_HD constexpr long long workspace_bytes(MoeDims d, int grid) {
  const long long slots = 4LL * 2 * grid * partial_slot_floats();
  const bool unit_rows = d.path == kPathSm90Fp8 && d.ranks == 1;  // the layers that can run the schedule
  const long long units = unit_rows ? unit_partial_bytes(d, d.capacity < kUnitTokens ? d.capacity : kUnitTokens) : 0;
  return partials_offset(d, grid) + (slots > units ? slots : units);
}
// The tail's bytes, which the unit rows may take.
MOEJIT_HD constexpr long long unit_rows_room(MoeDims d, int grid) {
  return workspace_bytes(d, grid) - partials_offset(d, grid);
}
MOEJIT_HD constexpr bool unit_partials_fit(MoeDims d, int grid, long long tokens) {
  return unit_partial_bytes(d, tokens) <= unit_rows_room(d, grid);
}

// Whether the compute role balances its stream-K shares by step cost (the
// atom's steps cost more at wider token tiles: Atom::kStepCost) and keeps
// every CTA's share boundaries in SMEM, or by step count, from a formula
// (moe_schedule.cuh). The compute role static_asserts that its atom agrees.
MOEJIT_HD constexpr bool path_cost_weighted(int path) {
  return path == kPathSm90Fp8;
}

// A projection of rows64 64-row weight tiles in items of `tiles`: the tiles of
// a token tile's last item (the rest; `tiles` where they divide).
MOEJIT_HD constexpr int last_item_tiles(int rows64, int tiles) {
  return (rows64 - 1) % tiles + 1;
}
// Whether the compute role runs a last item of `rest` tiles: a whole item, or,
// for an atom of weighted step costs (whose shares can weight the item's steps
// by its tiles + 3, PhaseShape), whole warpgroups' tiles in pairs (one weight box each).
MOEJIT_HD constexpr bool last_item_runs(int path, int groups, int tiles, int rest) {
  return rest == tiles ||
         (path_cost_weighted(path) && rest % tiles_per_group(groups, tiles) == 0 && (tiles == 1 || rest % 2 == 0));
}

// The activation bytes of one stage: tile_n rows of x_row_pitch, twice on split rows. A segment of n token
// columns (n = segment_columns(rows, tile_n)) stages its rows first and, on split rows, its small rows right
// after them, at n * x_row_pitch: n * 128 bytes is a multiple of 1024 on the fast path, so both keep the
// 128B swizzle's alignment and read as one K-major wgmma operand of 2n rows (8-row groups 1024 bytes apart).
MOEJIT_HD constexpr int x_stage_bytes(int path, int tile_n) {
  return tile_n * x_row_pitch(path) * (path_split_rows(path) ? 2 : 1);
}
// The width class c of a segment of `rows` token columns: its MMA width 8 << c (8, 16, 32, 64) is the
// narrowest that holds them. It also indexes an atom's step costs (moe_schedule.cuh).
MOEJIT_HD constexpr int tile_class(int rows) {
  return rows <= 8 ? 0 : rows <= 16 ? 1 : rows <= 32 ? 2 : 3;
}
// The token columns a consumer computes for a segment of `rows` (1..tile_n) rows, never more than tile_n.
MOEJIT_HD constexpr int segment_columns(int rows, int tile_n) {
  const int n = 8 << tile_class(rows);
  return n < tile_n ? n : tile_n;
}

// The compute role's dynamic shared memory. X tiles first (1024-byte aligned:
// the 128B swizzle atom), then weight steps, staged scale words and route ids,
// the barriers, the epilogue's amax exchange and the schedule tables. The
// per-expert counts and then the step costs of the routing prologue alias the
// X tiles and the weight steps after them (dead before the first stage is
// filled: the producers start once the shares are derived).
struct ComputeSmemLayout {
  int x;        // [stages][x_stage_bytes]: a segment's rows, then (path_split_rows) its small rows
  int w;        // [stages][tiles * kWeightStepBytes]
  int xs;       // [stages][tile_n] 16-byte scale records: word 0 is the column's UE8M0 scale word
  int route;    // int [stages][tile_n]: the route of each token column
  int full_w;   // u64 [stages]
  int full_x;   // u64 [stages]
  int empty;    // u64 [stages]
  int decoded;  // u64 [stages] (decoded scales only): the decoder warp's arrivals, once per lane
  int wdec;     // float [stages][tiles][64][4] (decoded scales only): 2^(code - 127) of each row's K32 blocks
  int xdec;     // float [stages][tile_n][4] (decoded scales only): the same of each token column
  int amax;     // float [tiles][kConsumerWarps][tile_n]
  int reduce;   // owner_reduce_bytes (step owners only): GEMM1's sums of the warpgroups that do not run a pair
  int active;   // int [E]: expert id of active index a
  int count;    // int [E]: routes of active index a
  int tile0;    // int [E + 1]: first token tile of active index a
  int shares;   // int [2][grid + 1]: per phase, the first K128 step of each CTA's share (path_cost_weighted)
  int scratch;  // int [64]: scan partials and broadcast words
  int total;    // bytes
  int counts;   // int [E] per-expert counts in the prologue (aliases x, then w)
  int cost0;    // int [2][E + 1] per phase, the step cost of the token tiles before active index a (aliases x, w)
};

// `experts`: the schedule's, E + shared (the fused shared expert is one more); `grid`: the compute role's.
MOEJIT_HD constexpr ComputeSmemLayout compute_smem_layout(int path, int groups, int tiles, int tile_n, int stages,
                                                          int experts, int grid, bool decoded = false) {
  ComputeSmemLayout l{};
  int at = 0;
  l.x = at, at += (int)align_up((long long)stages * x_stage_bytes(path, tile_n), 1024);
  l.w = at, at += stages * tiles * kWeightStepBytes;
  l.xs = at, at += kScaleRecordBytes * stages * tile_n;
  l.route = at, at += 4 * stages * tile_n;
  at = (int)align_up(at, 8);
  l.full_w = at, at += 8 * stages;
  l.full_x = at, at += 8 * stages;
  l.empty = at, at += 8 * stages;
  l.decoded = at, at += decoded ? 8 * stages : 0;
  if (decoded) at = (int)align_up(at, 16);  // LDS.128 of a row's or a column's four scales
  l.wdec = at, at += decoded ? 16 * stages * tiles * kWeightTileRows : 0;
  l.xdec = at, at += decoded ? 16 * stages * tile_n : 0;
  l.amax = at, at += 4 * tiles * kConsumerWarps * tile_n;
  l.reduce = at, at += owner_reduce_bytes(groups, tiles, tile_n);
  l.active = at, at += 4 * experts;
  l.count = at, at += 4 * experts;
  l.tile0 = at, at += 4 * (experts + 1);
  l.shares = at, at += path_cost_weighted(path) ? 4 * 2 * (grid + 1) : 0;
  l.scratch = at, at += 4 * 64;
  l.total = (int)align_up(at, 128);
  l.counts = l.x;
  l.cost0 = l.x;  // written once the counts are dead
  return l;
}

// Whether the prologue's counts (and, path_cost_weighted, step costs) fit in the X tiles and weight steps they
// alias, and the shape is one the role supports.
MOEJIT_HD constexpr bool compute_smem_valid(int path, int groups, int tiles, int tile_n, int stages, int experts) {
  const long long ring_bytes = (long long)stages * (x_stage_bytes(path, tile_n) + tiles * kWeightStepBytes);
  const long long prologue_bytes = path_cost_weighted(path) ? 8LL * (experts + 1) : 4LL * experts;
  return prologue_bytes <= ring_bytes && tile_n % 8 == 0 && tile_n >= 8 && tile_n <= kMaxTileN && stages >= 2 &&
         groups >= 1 && groups <= kMaxGroups && (tiles % groups == 0 || step_owners(groups, tiles)) &&
         (tiles == 1 || tiles % 2 == 0) && tiles_per_group(groups, tiles) * tile_n <= kMaxTileN &&
         // An owner waits for its next step (k + 3) before it frees k, and holds two passes' sums (registers).
         (!step_owners(groups, tiles) || (stages >= 4 && tile_n == 8));
}

}  // namespace contract
}  // namespace moejit
