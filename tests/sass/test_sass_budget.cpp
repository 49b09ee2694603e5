// The compute role's instruction budgets, pinned in CI on the SASS of the
// cubin that launches (nvdisasm): the fast path's K-loop may issue no more
// than a stated number of instructions, and of integer-pipe instructions, per
// 8 weights; the exact path's activation producer no more than a stated
// number per 16-byte copy pass.
//
// Why the K-loop numbers: at the HBM floor an H200 SM must consume 41 weights per
// clock (4.8 TB/s, 2 weights a byte, 132 SMs, 1.76 GHz). Its four schedulers
// issue 4 warp instructions a clock, so a loop that reaches the floor issues
// at most 4 * 32 * 8 / 41 = 25 instructions per 8 weights, and the integer
// pipe (16 lanes a clock per scheduler) takes at most 12.5 of them. With the
// epilogues, the producers and the barriers around it, the K-loop must stay
// well inside both. The budgets below are today's counts plus ~5%. The
// activation scales arrive as FP32 (decoded where they are staged), and a
// weight scale costs two integer operations (code 0 read as 0.0, for weights
// without code-0 blocks of nonzero values). Counted at e70ced0: GEMM2's loop at N = 8 (GLM5.2 B = 8) issues 16.9
// instructions and 7.3 integer ops per 8 weights, at N = 16 (B = 64) 22.1 and 8.3; GEMM1's on split rows (one
// wgmma of 2N columns per K32 block) 19.5 and 8.1 at N = 8 (19.9 and 8.2 since the compute CTA runs three activation
// warps: the same loop, allocated otherwise), 26.4 and 10.4 at N = 16; on paired rows (B <= 8, a
// segment of at most 4 rows: a token's large and small rows side by side, one wgmma of 8 columns a K32 block,
// MoeLaunchPlan::paired_rows) 16.0 and 7.3 (the same loop in B = 64's 16-column tiles, planned since c8476f7: 15.9
// and 7.3 at 1ee2478). For weights that need code 0 as 2^-127
// (MoeCodegenOptions::subnormal_weight_scales) a weight scale costs three: 17.9 / 23.1 / 20.5 / 27.4 and
// 8.3 / 9.1 / 9.1 / 11.1. With decoded scales (a decoder warp writes each stage's scales as FP32,
// MoeCodegenOptions::decoded_scales) 14.8 / 19.8 / 17.2 / 24.4 and 5.4 / 6.4 / 5.6 / 8.3. (The message of each
// case prints its count.) GEMM1's rows in one scale frame per token (MoeLaunchPlan::token_frame, planned from
// B = 9 where the weights allow: not for subnormal weight scales) drop the scale product from GEMM1's promotion:
// counted at its commit (B = 64), split 16.7 and 7.4 at N = 8, 20.9 and 7.9 at N = 16, paired 14.6 and 7.0,
// decoded split 19.1 and 6.9 at N = 16 (and the decoded GEMM2 loop at N = 16, allocated otherwise, 20.0 and
// 6.6). The loops' unused reads past their last step moved to the stage they still hold (next_stage's `held`:
// racecheck reported them against the producers' next fill) took GEMM2's loop at N = 16 from 21.7 and 8.0 to
// 20.8 and 7.5, GEMM1's framed split loop at N = 16 from 20.9 and 7.9 to 21.0 and 8.3, and to 20.8 and 8.0 once
// every consumer thread releases its stages (its integer budget 8.7 -> 8.5, 6% over; the H100 bench level at
// every B: bench/results/2026-12-06-h100-s85-s88-racecheck.md, 2026-12-07-h100-s89-s93-every-thread-release.md).
// A change that grows a loop past its budget fails here, before a GPU ever runs it.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <fmt/format.h>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>

#include "codegen/device_profile.hpp"
#include "codegen/moe_config.hpp"
#include "codegen/moe_kernels.hpp"
#include "codegen/moe_launch_plan.hpp"
#include "jit/kernel_builder.hpp"
#include "tests/sass/sass_loops.hpp"

using namespace moejit;

namespace {
std::string g_nvdisasm;

struct Budget {
  int batch;               // GLM5.2 forward whose plan runs this token width
  int n;                   // wgmma N of the loop
  double issued;           // instructions per 8 weights
  double integer;          // integer-pipe instructions per 8 weights
  bool split;              // GEMM1's loop on split rows: one wgmma of 2n columns per K32 block
  bool decoded = false;    // MoeCodegenOptions::decoded_scales: the loop reads FP32 scales a decoder warp wrote
  bool subnormal = false;  // MoeCodegenOptions::subnormal_weight_scales: weight scale code 0 decodes as 2^-127
  bool paired = false;     // split rows paired (contract::kPairedRows): one wgmma of n columns per K32 block
};
}  // namespace

TEST_CASE("the loop reader counts the innermost MMA loops of nvdisasm output") {
  const std::string sass = R"(
        /*0100*/                   MOV R1, c[0x0][0x28] ;
.L_x_1:
        /*0110*/                   LOP3.LUT R2, R3, 0x9c9c9c9c, RZ, 0xc0, !PT ;
.L_x_2:
        /*0120*/                   SHF.L.U32 R4, R3, 0x2, RZ ;
        /*0130*/                   QGMMA.64x8x32.F32.E4M3.E4M3 R24, R4, gdesc[UR4], RZ, !UPT, gsb0 ;
        /*0138*/                   WARPGROUP.DEPBAR.LE gsb0, 0x0 ;
        /*0140*/                   FFMA R5, R6, R7, R5 ;
        /*0150*/                   IMAD.MOV.U32 R8, RZ, RZ, R9 ;
        /*0160*/               @P0 BRA `(.L_x_2) ;
        /*0170*/                   IADD3 R10, R10, 0x1, RZ ;
        /*0180*/               @P1 BRA `(.L_x_1) ;
.L_x_3:
        /*0190*/                   HGMMA.64x8x16.F32.BF16 R24, R4, gdesc[UR4], RZ, !UPT, gsb0 ;
.L_x_4:
        /*01a0*/                   SYNCS.PHASECHK.TRANS64.TRYWAIT P2, [R7+URZ], R4 ;
        /*01b0*/              @!P2 BRA `(.L_x_4) ;
        /*01c0*/               @P1 BRA `(.L_x_3) ;
        /*01d0*/                   EXIT ;
)";
  const std::vector<sass::LoopMix> loops = sass::mma_loops(sass);
  // .L_x_1 holds .L_x_2, an MMA loop: an outer loop. .L_x_3 holds .L_x_4, which has no MMA: one loop.
  REQUIRE(loops.size() == 2);
  CHECK(loops[1].label == ".L_x_3");
  CHECK(loops[1].instructions == 4);
  CHECK(loops[1].mma == 1);
  CHECK(loops[0].label == ".L_x_2");
  CHECK(loops[0].instructions == 6);
  CHECK(loops[0].alu == 1);
  CHECK(loops[0].imad == 1);
  CHECK(loops[0].fp32 == 1);
  CHECK(loops[0].mma == 1);
  CHECK(loops[0].mma_waits == 1);
  CHECK(loops[0].first_mma.rfind("QGMMA.64x8x32", 0) == 0);
}

TEST_CASE("the fast path's K-loop stays within its instruction budget per 8 weights") {
  const codegen::MoeConfig glm = codegen::builtin_model("glm5.2");
  const codegen::DeviceProfile h200 = codegen::builtin_profile("h200");
  codegen::MoeCodegenOptions fast;
  fast.path = codegen::ComputePath::fast;
  // Split rows on 16 columns wait after every K32 block (AtomSm90Fp8::k32_per_wait), since two blocks' partial
  // sums spill at the 128 registers of three warpgroups: four waits a step cost 1.4 integer instructions per 8
  // weights more than two did. B = 64's 16-column tiles pair their short segments (planned up to
  // AtomTraits::paired_short_max_batch) in the same paired loop as B = 8's tiles, held to the same budget.
  // Instructions a K128 step of each loop, for the step costs below: GEMM2's ("g"), GEMM1's split ("x") in the
  // token frame ("f") or MX blocks, with subnormal weight scales ("s"), by N.
  std::map<std::string, int> steps;
  for (const Budget& b :
       {Budget{8, 8, 18.0, 8.8, false}, Budget{64, 16, 22.7, 8.7, false}, Budget{8, 8, 20.2, 8.3, true},
        Budget{64, 8, 17.6, 7.8, true}, Budget{64, 16, 22.0, 8.5, true}, Budget{8, 8, 19.1, 9.8, false, false, true},
        Budget{64, 16, 23.7, 9.8, false, false, true}, Budget{8, 8, 20.9, 9.3, true, false, true},
        Budget{64, 16, 27.8, 11.3, true, false, true}, Budget{8, 8, 16.0, 6.5, false, true},
        Budget{64, 16, 20.5, 7.0, false, true}, Budget{8, 8, 18.0, 6.5, true, true},
        Budget{64, 16, 20.1, 7.3, true, true}, Budget{2, 8, 16.8, 7.7, true, false, false, true},
        Budget{8, 8, 16.8, 7.7, true, false, false, true}, Budget{64, 8, 15.6, 7.4, true, false, false, true}}) {
    CAPTURE(b.batch);
    CAPTURE(b.split);
    CAPTURE(b.paired);
    CAPTURE(b.decoded);
    CAPTURE(b.subnormal);
    codegen::MoeCodegenOptions options = fast;
    options.decoded_scales = b.decoded;
    options.subnormal_weight_scales = b.subnormal;
    const codegen::MoeLaunchPlan plan = codegen::plan_launch(glm, b.batch, h200, options);
    if (b.paired) REQUIRE(plan.paired_rows);  // (B = 8 and 64 pair their short segments and split the others)
    const jit::BuildArtifacts built = jit::build_kernel(codegen::moe_compute_spec(glm, plan));
    const std::vector<sass::LoopMix> loops = sass::mma_loops(sass::disassemble(g_nvdisasm, built.cubin));
    // Per iteration (one K128 step) a consumer thread expands 8 words of 8 codes for each of its tiles.
    const double eights = 8.0 * (plan.tiles / plan.groups);
    int found = 0, step = 0;
    for (const sass::LoopMix& loop : loops) {
      // One wgmma per K32 block and tile: N columns (GEMM2) or 2N (GEMM1 on split rows); a wait every two K32
      // blocks, every one for split rows on 16 columns (AtomSm90Fp8::k32_per_wait).
      const int waits = b.split && !b.paired && b.n * plan.tiles / plan.groups > 16 ? 4 : 2;
      const int width = b.split && !b.paired ? 2 * b.n : b.n;
      if (loop.first_mma.find(fmt::format("QGMMA.64x{}x32", width)) == std::string::npos) continue;
      // FP32 per K32 block and tile: an FFMA and a scale product per accumulator, and split rows' pair sum; paired
      // rows add a token's pair and scale it once: 2 sums, 2 products, 2 FFMA. GEMM1's rows in the token frame
      // (MoeLaunchPlan::token_frame) have no scale product.
      const int gemm1 = plan.token_frame ? 4 : 6;
      const int fp32 =
          b.paired ? gemm1 * 4 * plan.tiles / plan.groups : (b.split ? gemm1 : 4) * b.n * plan.tiles / plan.groups;
      if (loop.mma != 4 * plan.tiles / plan.groups || loop.mma_waits != waits || loop.fp32 != fp32) continue;
      ++found;
      const double issued = loop.instructions / eights, integer = loop.alu / eights;
      MESSAGE(
          fmt::format("{}{}{}N = {} loop {}: {} instructions per K128 step ({} integer, {} IMAD, {} FP32, {} MMA) = "
                      "{:.1f} issued and {:.1f} integer per 8 weights (budget {} and {})",
                      b.decoded ? "decoded scales, " : "", b.subnormal ? "subnormal weight scales, " : "",
                      b.paired  ? "paired "
                      : b.split ? "split "
                                : "",
                      b.n, loop.label, loop.instructions, loop.alu, loop.imad, loop.fp32, loop.mma, issued, integer,
                      b.issued, b.integer));
      CHECK(issued <= b.issued);
      CHECK(integer <= b.integer);
      step = loop.instructions;
    }
    CHECK(found >= 1);
    // (One loop of the kind, or its count would be one of several.)
    if (!b.decoded && !b.paired && found == 1)
      steps[fmt::format("{}{}{}{}", b.split ? "x" : "g", plan.token_frame ? "f" : "", b.subnormal ? "s" : "", b.n)] =
          step;
  }
  // The schedule's step costs (contract::kSm90Fp8FrameStepCost / kSm90Fp8BlockStepCost) weigh a 16-column step
  // against an 8-column one as these loops do, within 5%: stale costs cut the stream shares unevenly (GLM5.2
  // B = 256's last CTA finished 2.7% after the median one on the H200 under the MX-block table's 4 : 3 with the
  // frame's loops at 5 : 4, bench/results/2026-12-07-h200-s95-s98-acceptance.md). The 8-column counts of GEMM2
  // and of GEMM1 in MX blocks are B = 8's kernel's, the 16-column ones B = 64's: the loops are the same code. GEMM1 in
  // MX blocks from B = 9 is the subnormal weight scales' loop (the frame holds for every other weight), so its counts
  // stand for that table.
  struct Ratio {
    const char* loops;
    const int (&table)[2][4];
    int phase;
    const char *n8, *n16;
  };
  for (const Ratio& r : {Ratio{"GEMM1 in the token frame", contract::kSm90Fp8FrameStepCost, 0, "xf8", "xf16"},
                         Ratio{"GEMM2", contract::kSm90Fp8FrameStepCost, 1, "g8", "gf16"},
                         Ratio{"GEMM2", contract::kSm90Fp8BlockStepCost, 1, "g8", "gf16"},
                         Ratio{"GEMM1 in MX blocks", contract::kSm90Fp8BlockStepCost, 0, "xs8", "xs16"}}) {
    CAPTURE(std::string(r.loops));
    REQUIRE(steps.count(r.n8) == 1);
    REQUIRE(steps.count(r.n16) == 1);
    const double sass = double(steps[r.n16]) / steps[r.n8], table = double(r.table[r.phase][1]) / r.table[r.phase][0];
    MESSAGE(fmt::format("{}: {} / {} instructions a step = {:.3f}; step costs {} / {} = {:.3f}", r.loops, steps[r.n16],
                        steps[r.n8], sass, r.table[r.phase][1], r.table[r.phase][0], table));
    CHECK(std::abs(table - sass) <= 0.05 * sass);
  }
}

TEST_CASE("the unit schedule's step owners (B = 1) stay within the same budgets per 8 weights") {
  // A step owner runs a whole K128 step of 4 tiles in two passes of 2: 16 wgmmas of 8 columns an iteration, a
  // wait after every two K32 blocks; passing the other owners' stages is an inner loop without MMAs, counted
  // once. GEMM1 runs paired split rows (contract::kPairedRows: a token's large and small rows side by side, one
  // 8-column wgmma for both): per K32 block and tile, a pair sum, a scale product and an FFMA for each of the
  // thread's 2 rows, 6 FP32 where the 16-column split takes 12.
  const codegen::DeviceProfile h200 = codegen::builtin_profile("h200");
  for (const char* model : {"glm5.2", "dsv4.1-flash"}) {
    CAPTURE(std::string(model));
    const codegen::MoeConfig c = codegen::builtin_model(model);
    const codegen::MoeLaunchPlan plan = codegen::plan_launch(c, 1, h200);
    REQUIRE(plan.schedule == codegen::Schedule::units);
    REQUIRE(contract::step_owners(plan.groups, plan.tiles));
    const jit::BuildArtifacts built = jit::build_kernel(codegen::moe_compute_spec(c, plan));
    const std::vector<sass::LoopMix> loops = sass::mma_loops(sass::disassemble(g_nvdisasm, built.cubin));
    const double eights = 8.0 * plan.tiles;  // 8 words of 8 codes a tile, all 4 tiles an iteration
    const int paired_fp32 = (plan.token_frame ? 4 : 6) * 4 * plan.tiles;  // no scale product in the token frame
    struct Loop {
      bool gemm1;
      double issued, integer;
    };
    // Today (both models): GEMM1 15.1 issued and 6.7 integer (13.8 and 6.6 in the token frame, which B = 1 does not
    // plan; 18.5 and 7.3 on 16-column split rows), GEMM2 (its items' stores in the loop) 20.3 and 7.9 with one
    // stage release a warp, 21.0-21.3 and 8.4-8.7 since every consumer thread releases its stages (the pattern
    // racecheck orders; the H100 bench level at B = 1, bench/results/2026-12-07-h100-s89-s93-every-thread-release.md);
    // the budgets are ~5% above.
    for (const Loop& b : {Loop{true, 15.9, 7.2}, Loop{false, 22.4, 9.1}}) {
      CAPTURE(b.gemm1);
      int found = 0;
      for (const sass::LoopMix& loop : loops) {
        if (loop.first_mma.find("QGMMA.64x8x32") == std::string::npos) continue;
        if (loop.mma != 4 * plan.tiles || loop.mma_waits != 4 || (loop.fp32 == paired_fp32) != b.gemm1) continue;
        ++found;
        const double issued = loop.instructions / eights, integer = loop.alu / eights;
        MESSAGE(
            fmt::format("{} owner loop {}: {} instructions per K128 step ({} integer, {} IMAD, {} FP32, {} MMA) "
                        "= {:.1f} issued and {:.1f} integer per 8 weights (budget {} and {})",
                        b.gemm1 ? "GEMM1 paired" : "GEMM2", loop.label, loop.instructions, loop.alu, loop.imad,
                        loop.fp32, loop.mma, issued, integer, b.issued, b.integer));
        CHECK(issued <= b.issued);
        CHECK(integer <= b.integer);
      }
      CHECK(found == 1);
    }
  }
}

TEST_CASE("the exact path's activation producer stages a 16-byte chunk in a few instructions") {
  // At GLM5.2 B = 256 one producer warp stages 16 BF16 rows (8 passes of one
  // 16-byte cp.async a lane) per K128 step for four consumer warps. When each
  // pass re-read SR_TID.X and rebuilt the chunk's address (23 instructions a
  // pass, a dependent chain), the consumers waited on it a quarter of their
  // time (ncu, bench/results/2026-12-01-h200-activation-producer.md). Now a
  // pass is an address add, the descriptor moves and the copy: 9-12.
  const codegen::MoeConfig glm = codegen::builtin_model("glm5.2");
  const codegen::DeviceProfile h200 = codegen::builtin_profile("h200");
  codegen::MoeCodegenOptions exact;
  exact.path = codegen::ComputePath::exact;
  const codegen::MoeLaunchPlan plan = codegen::plan_launch(glm, 256, h200, exact);
  REQUIRE(plan.tile_n == 16);
  const jit::BuildArtifacts built = jit::build_kernel(codegen::moe_compute_spec(glm, plan));
  const std::vector<std::string> ins = sass::instructions(sass::disassemble(g_nvdisasm, built.cubin));
  constexpr std::size_t kMaxGap = 40;  // a pass sequence's copies are closer than this; separate sequences are not
  const std::vector<std::vector<std::size_t>> runs = sass::copy_runs(ins, kMaxGap);
  // tile_n 16 rows x 256 bytes per K128 = 256 chunks = 8 passes of 32 lanes.
  const std::vector<std::size_t>* passes = nullptr;
  for (const auto& run : runs)
    if (run.size() >= 8) passes = &run;
  REQUIRE_MESSAGE(passes != nullptr, "no run of 8 copies (found ", runs.size(), " runs)");
  const double per_pass = double(passes->back() - passes->front()) / double(passes->size() - 1);
  int s2r = 0;
  for (std::size_t i = passes->front(); i <= passes->back(); ++i) s2r += ins[i].find("S2R ") != std::string::npos;
  MESSAGE(fmt::format("{} copies, {:.1f} instructions a pass, {} S2R between them (budget 13, 0)", passes->size(),
                      per_pass, s2r));
  CHECK(per_pass <= 13.0);
  CHECK(s2r == 0);
}

int main(int argc, char** argv) {
  g_nvdisasm = sass::find_nvdisasm(MOEJIT_SOURCE_DIR);
  const bool required = std::getenv("MOEJIT_REQUIRE_NVDISASM") && *std::getenv("MOEJIT_REQUIRE_NVDISASM") == '1';
  if (g_nvdisasm.empty()) {
    std::fprintf(stderr,
                 "%s: no nvdisasm (set MOEJIT_NVDISASM, or run tools/dev.sh deps, which installs the "
                 "nvidia-cuda-nvdisasm wheel under .cache/nvdisasm)\n",
                 required ? "error" : "skipped");
    return required ? 1 : 77;
  }
  doctest::Context context(argc, argv);
  return context.run();
}
