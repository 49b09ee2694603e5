#include "codegen/moe_atoms.hpp"

#include "templates/moe_weight_layouts.cuh"

namespace moejit::codegen {

std::string_view path_name(ComputePath p) {
  return p == ComputePath::fast ? "fast" : "exact";
}

ComputePath default_path(Arch arch, Recipe recipe) {
  return arch == Arch::sm_90a && recipe == Recipe::w4a16 ? ComputePath::exact : ComputePath::fast;
}

std::optional<ComputePath> parse_path(std::string_view text) {
  if (text == "fast") return ComputePath::fast;
  if (text == "exact") return ComputePath::exact;
  return std::nullopt;
}

const std::vector<AtomTraits>& all_atoms() {
  using namespace contract;
  static const std::vector<AtomTraits> atoms = {
      // One CTA of three consumer warpgroups per SM, each on two 64-row tiles: a 384-row item shares each
      // activation stage, and one scale decode and barrier round serve six tiles' weights. Twelve consumer
      // warps hide the K-loop's latency that eight left exposed (its loops alone: +11-29% over two
      // warpgroups, bench/results/2026-12-03-h200-kloop-probe.md). Fourteen warps leave 128 registers a
      // thread (four warps on some SM sub-partition's 16K registers).
      // At B <= 8 a 4-stage ring: it beat the 7 that fit beside three warpgroups at B = 8 in 10 of 12 A/B pairs
      // over two leases (+1.3 points), and at B = 16 the pairs split 5 to 3 within the spread
      // (bench/results/2026-12-04-h200-flips-and-ring.md). At B = 2-6 it was 5 stages (1-2.5 points over the 10
      // that fit, 2026-12-02/s4-stages-sweep.log) until GEMM1 paired its rows; on paired rows, three rounds of
      // B = 2-6 on both models, 4 stages ran level (GLM5.2 B = 3) or faster, medians +0.1 to +1.5 points at
      // B = 2-4 (bench/results/2026-12-04-h200-four-stage-ring.md). At B = 16 and 32, 5 stages against the 7
      // that fit: both rounds faster or level on both models (means +0.3 to +2.7 points; same file).
      // The unit schedule at B = 1: +6.6 to +8.3 points over stream (GLM5.2 58.4-60.1% against 51.8,
      // DSV4.1-Flash 48.6-49.1% against 41.5); from B = 2 its two warpgroups' K-loop is the limit and stream
      // wins (bench/results/2026-12-03-h200-unit-schedule.md). On three warpgroups that own every third step
      // (contract::step_owners) with an 8-stage ring, B = 1 gains another 1.5 (GLM5.2) and 0.3-0.5
      // (DSV4.1-Flash) points over two warpgroups at 5; 5 and 10 stages ran no faster than two warpgroups; at
      // B = 2-3 stream stays ahead or level; their GEMM1 on paired rows adds 2.4-2.7 more
      // (bench/results/2026-12-04-h200-step-owners.md). PDL between the roles up to B = 4: +0.9 to +1.9 points
      // at B = 1, +0.4 to +1.6 at B = 2, within the runs' spread at B = 4 (three rounds, H200,
      // bench/results/2026-12-03-h200-prologue-and-loops.md); on the 4-stage ring, two rounds at B = 3-4 ran
      // faster with it on both models, means +0.5 to +1.5 points (bench/results/2026-12-04-h200-four-stage-ring.md).
      // With paired rows and the 4-stage stream ring, B = 2 on two unit warpgroups at 5 stages ran 73.8 / 76.2% for
      // GLM5.2 (16 experts: 256 units, 0.97 of two rounds of 132 CTAs; 0.95 expected) against stream's 71.5 / 71.6
      // and the step owners' 73.2 / 73.2; DSV4.1-Flash's 12 experts (0.82) stay on stream, which ran 2-4 points
      // ahead of units there (same file).
      // GEMM1's segments of at most 4 rows paired inside the 16-column tiles up to B = 64: on 80 SMs of an H100,
      // which asks each SM for the bytes a clock an H200 asks of its 132 (the default plan there runs -7.4 to +4.6
      // points from the H200's record at B = 16-256, the same shape), +3.4 to +9.0 points at B = 16-64 on both
      // models in both orders, -0.8 to +1.8 at B = 128-256, where most segments are wider; on 88 SMs +2.7 to +6.6 at
      // B = 16-32 and level at B = 64, which runs near the copy bandwidth there; on all 132 SMs, bound by the copy
      // bandwidth, level within 0.7 (bench/results/2026-12-06-h100-paired-on-80-sms.md).
      // GEMM1's rows in one scale frame per token from B = 9 (the 16-column tiles): on 80 SMs of an H100, means of
      // both orders, GLM5.2 +0.8 / +1.8 / +2.6 / +7.6 / +7.8 points at B = 16 / 32 / 64 / 128 / 256, DSV4.1-Flash
      // +0.6 / +0.1 / -0.4 / +3.3 / +3.3; on all 132 SMs at B = 1-8 (one order) -1.6 to 0, its dispatch role
      // (a CTA a token, the row's maximum first) 0.2-0.8 us longer (bench/results/2026-12-06-h100-token-frame.md).
      {Arch::sm_90a,
       ComputePath::fast,
       Recipe::w4a8_mx,
       kPathSm90Fp8,
       "sm90-fp8-wgmma",
       "moejit::moe_compute_sm90_fp8",
       {"wgmma.mma_async.sync.aligned.m64n8k32.f32.e4m3.e4m3", "cp.async.mbarrier.arrive"},
       kLayoutSm90Fp8,
       max_weight_scale_code(kPathSm90Fp8),
       3,
       6,
       1,
       16,
       {{8, 4}, {32, 5}},
       1,
       4,
       0,
       3,
       8,
       5,
       2,
       0.9,
       64,
       9},
      // Three CTAs of one warpgroup: the BF16 mma.sync loop is issue-bound and more warps hide its latency;
      // 96 registers a thread hold a 16-column tile (32 spills).
      // PDL between the roles up to B = 2: in two rounds against the same kernels without it, B = 1 and 2 ran
      // faster on both models (+0.1 to +2.3 points), B = 4 split (GLM5.2 -1.3, DSV4.1-Flash +1.9), and B = 8 lost
      // 4.3 points in a first sweep (H100, bench/results/2026-12-05-h100-exact-pdl.md). The item schedule at
      // B = 1: +13.7% (DSV4.1-Flash) and +2.9% (GLM5.2) over stream in two rounds; at B = 2-4 -5.1% to +0.7%, from
      // B = 8 4.0-12.6% slower (H200, bench/results/2026-12-05-h200-item-schedule.md).
      {Arch::sm_90a,
       ComputePath::exact,
       Recipe::w4a8_mx,
       kPathSm90Bf16,
       "sm90-bf16-mma",
       "moejit::moe_compute_sm90_bf16",
       {"mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32", "cp.async.mbarrier.arrive"},
       kLayoutSm90Bf16,
       max_weight_scale_code(kPathSm90Bf16),
       1,
       1,
       3,
       16,
       {},
       0,
       2,
       1},
      // The W4A16 recipe on the exact atom's mainloop: the caller's BF16 rows, a BF16 handoff.
      {Arch::sm_90a,
       ComputePath::exact,
       Recipe::w4a16,
       kPathSm90Bf16,
       "sm90-bf16-mma-w4a16",
       "moejit::moe_compute_sm90_bf16_w4a16",
       {"mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32", "cp.async.mbarrier.arrive"},
       kLayoutSm90Bf16,
       max_weight_scale_code(kPathSm90Bf16),
       1,
       1,
       3,
       16},
      {Arch::sm_120a,
       ComputePath::fast,
       Recipe::w4a8_mx,
       kPathSm120,
       "sm120-mxf8f6f4",
       "moejit::moe_compute_sm120",
       {"mma.sync.aligned.kind::mxf8f6f4.block_scale", "cp.async.mbarrier.arrive"},
       kLayoutSm120,
       max_weight_scale_code(kPathSm120),
       1,
       1,
       0,
       64},
  };
  return atoms;
}

const AtomTraits* find_atom(Target target, ComputePath path, Recipe recipe) {
  for (const AtomTraits& a : all_atoms())
    if (a.arch == target.arch && a.path == path && a.recipe == recipe) return &a;
  return nullptr;
}

}  // namespace moejit::codegen
