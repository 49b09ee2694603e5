#pragma once
// The compute role's schedules, the shapes of its items and segments, and its shared-memory layout (part of
// the host/device contract: moe_contract.cuh).

#include "moe_contract_paths.cuh"
#include "moe_contract_workspace.cuh"

namespace moejit {
namespace contract {

// The compute role's schedules (codegen::Schedule):
//  - stream: GEMM1 then GEMM2, each phase's K128 steps split evenly over the
//    CTAs (stream-K); a GEMM2 step waits for the GEMM1 tiles of its K block,
//    whichever CTAs ran them.
//  - units (small B): a unit is (active expert, K128 block s of I): GEMM1 of
//    the 4 tiles of block s, then GEMM2's K block s over all of H. A unit's
//    GEMM2 reads only its own GEMM1 rows, so no CTA waits for another; each
//    unit leaves FP32 partial rows and finalize adds an expert's I/128 of them.
//  - items (small B, one GPU, the exact path's atoms): whole items dealt
//    round-robin over the grid, GEMM1's then GEMM2's in one list; no item is
//    cut, so no CTA adds another's partial sums, and a GEMM2 step waits for
//    its K block's GEMM1 tiles as on stream. A CTA may run one item more than
//    another; the CTAs sharing an SM share its issue slots, which evens that
//    out where an SM holds several (the exact atom's three).
constexpr int kScheduleStream = 0, kScheduleUnits = 1, kScheduleItems = 2;
// The atoms the item schedule runs on: the sm_90a exact path's (BF16 products; W4A8 and W4A16), whose steps all
// cost the same (path_cost_weighted), and which are the ones it has run on.
MOEJIT_HD constexpr bool schedule_items_runs(int path) {
  return path == kPathSm90Bf16;
}
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

// Whether the compute role balances its stream-K shares by step cost (the
// atom's steps cost more at wider token tiles: Atom::kStepCost) and keeps
// every CTA's share boundaries in SMEM, or by step count, from a formula
// (moe_schedule.cuh). The compute role static_asserts that its atom agrees.
MOEJIT_HD constexpr bool path_cost_weighted(int path) {
  return path == kPathSm90Fp8;
}
// The sm90-fp8-wgmma atom's step costs (AtomSm90Fp8::kStepCost) by phase (GEMM1 split rows, GEMM2) and token
// tile class (N = 8, 16, 32, 64): in proportion to its K-loops' SASS instructions a K128 step at N = 8 and 16
// (tests/sass holds each 16 / 8 ratio to the SASS's within 5%), 32 and 64 extending the 8 -> 16 step linearly
// (the atom's tile_n is at most 16). GEMM1's loops in the token frame (265 / 333 instructions a step) and in
// MX blocks (384 / 506 when it was made; 330 / 423 today for weights with subnormal scales, which keep MX blocks
// at every B) differ; GEMM2's are the same in both (270 / 333).
inline constexpr int kSm90Fp8FrameStepCost[2][4] = {{20, 25, 35, 55}, {17, 21, 29, 45}};
inline constexpr int kSm90Fp8BlockStepCost[2][4] = {{24, 32, 47, 77}, {17, 21, 29, 45}};

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
  int xs;       // [stages][tile_n] 16-byte scale records: word 0 is the column's UE8M0 scale word (fp8 rows)
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
  l.xs = at, at += path_fp8_rows(path) ? kScaleRecordBytes * stages * tile_n : 0;  // BF16 images carry no scales
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
