#pragma once
// The workspace of a layer and stream, one flat allocation: its header (the forward's counters and expert
// parallelism's peer table), the compute role's trace slots and the regions every role finds from its
// compile-time constants (part of the host/device contract: moe_contract.cuh).

#include "moe_contract_paths.cuh"

namespace moejit {
namespace contract {

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
// workspace (the last compute CTA of a forward bumps it; on the unit
// schedule, the finalize grid), so a forward tags its partial sums with
// epoch + 1 and no flag needs a reset. `done` counts the compute CTAs that
// finished this forward (the unit schedule leaves it at 0). The rest is expert parallelism's
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
  kTraceExit,              // thread 0, after the epoch bookkeeping (the unit schedule has none)
  kTraceSteps0,            // K128 steps of GEMM1 this CTA streamed (a count)
  kTraceSteps1,            // K128 steps of GEMM2
  kTraceActRoutes,         // activation warp 0, finding the routes of its token tiles (ns)
  kTraceSlots = 16
};

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

// A split-K slot: every consumer thread's accumulators of its tiles (tiles / groups * tile_n / 2 <= kMaxTileN / 2
// each), in float4 granules (partial_granule).
MOEJIT_HD constexpr long long partial_slot_floats() {
  return (long long)consumer_threads(kMaxGroups) * kMaxTileN / 2;
}
// Where granule g (floats 4g..4g+3 of a thread's accumulators) of consumer thread t sits in a slot, in float4s,
// for a CTA of `threads` consumer threads: a warp's 32 threads at one g are 512 contiguous bytes. The kernel adds
// t to the slot's base once and g's offset, partial_granule(g, 0, threads), as an immediate. Thread-major,
// each thread's 16 bytes took a 32-byte sector of their own (ncu: 12.3 MB of partial stores at DSV4.1-Flash
// B = 2, and 3.3% more DRAM bytes; bench/results/2026-12-06-h100-partial-granules.md).
MOEJIT_HD constexpr int partial_granule(int g, int t, int threads) {
  return g * threads + t;
}

// The GEMM2 readiness counters: int [E + shared][I/128], by (active expert index, K128 block of I).
MOEJIT_HD constexpr long long ready_counters(MoeDims d) {
  return (long long)(d.experts + d.shared) * (d.inter / 128);
}

MOEJIT_HD constexpr WorkspaceLayout workspace_layout(MoeDims d) {
  WorkspaceLayout l{};
  long long at = 0;
  const long long routes = route_capacity(d);
  const bool fp8 = path_fp8_rows(d.path);
  l.header = at, at += align_up(sizeof(MoeHeader), 256);
  l.ready = at, at += align_up(4 * ready_counters(d), 256);
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

// The unit schedule's partial rows (kScheduleUnits, moe_contract_compute.cuh): float [B (k + shared)][I/128][H],
// route t k + j at row t k + j, the shared route of token t at B k + t. They take the split-K slots' bytes
// (partials_offset), which that schedule leaves unused, so the workspace is the same for every schedule and batch
// (workspace_bytes).
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

}  // namespace contract
}  // namespace moejit
