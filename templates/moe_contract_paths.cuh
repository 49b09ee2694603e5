#pragma once
// The MMA paths of the compute role and what each fixes: the staged activation rows, the weight step blob, and
// the compute CTA's warps (part of the host/device contract: moe_contract.cuh).

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
// Paired split rows (GEMM1 wherever a segment has at most kPairedRows rows: the planner pairs up to the atom's
// paired_short_max_batch, B <= 64, and at any B where MoeCodegenOptions::paired_rows asks;
// MoeLaunchPlan::paired_rows): token r's large row at column 2r and its small row at 2r + 1 of one 8-column tile.
// One wgmma of 8 columns then covers both (not one of 16), and a thread's two columns are one token's: it adds them
// and scales the sum once, half the FP32 promotion of 16 columns. A column's K32 sum holds its own products only,
// and the FP32 operations are the 16-column split's, in its order.
constexpr int kPairedRows = 4;
// The compute kernel's kPaired: no pairing; every GEMM1 segment paired (B <= kPairedRows: its token tiles hold
// kPairedRows rows, so a token routed to one expert more than once makes more tiles, never a wider segment); or
// the segments of at most kPairedRows rows paired and the others split on 2N columns (8-column token tiles at
// B <= 8, the 16-column ones above).
constexpr int kPairedNone = 0, kPairedAll = 1, kPairedShort = 2;
// The large row holds the elements of magnitude >= 2^4 (E4M3 magnitude code
// 0x58), the small row the rest. An MX block's scale puts its amax in
// [256, 448], so the large row spans at most 4.8 octaves, and with E2M1
// weights (0.5..6) its products 8.4 octaves of 6-bit significands: within 13
// bits of the largest. x_q that is not MX-normalized stays correct (the rows
// still sum to x), only less precise.
constexpr int kSplitOctaves = 4;
// The token frame (MoeLaunchPlan::token_frame) sums GEMM1's K32 partials times the weight scale alone, the
// activations' frame multiplied in after the K loop. A frame's elements are at most 448 < 2^8.81 and the E4M3
// weights 6 * 2^-6 = 2^-3.42, so over K = H <= 8192 (the largest hidden size a config takes) the sums, times the
// epilogue's 64, stay under 2^(c - 127 + 24.4) for weight scale codes up to c: finite up to c = 230; weights
// with a larger code keep the MX blocks.
constexpr int kFrameMaxWeightScaleCode = 230;
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
// Arrivals that release a stage of the ring (moe_pipeline.cuh's release_stage): every consumer thread's.
MOEJIT_HD constexpr int stage_release_arrivals(int groups) {
  return consumer_threads(groups);
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

// A staged activation scale word travels in a 16-byte record (word 0): GEMM2's
// come from the handoff other SMs wrote during this forward, and only 16-byte
// cp.async (.cg) skips the L1, whose stale copy of a neighbour's record would
// otherwise be read.
constexpr int kScaleRecordBytes = 16;

}  // namespace contract
}  // namespace moejit
