// The launch plan's choices for the fast atom on one GPU, and that the
// kernels it emits carry them: the ring's depth, paired split rows, the
// token frame, the one-warp routing tables (or the block's), PDL between the
// roles, decoded and subnormal weight scales. No GPU: the planner, the kernel
// specs and, where a choice shows in the code, the assembled kernel. (The
// schedules: test_moe_plan_schedules.cpp; every kernel compiling within its
// plan: test_moe_kernels.cpp.)
#include <doctest/doctest.h>

#include <string>

#include "codegen/moe_kernels.hpp"
#include "codegen/planner.hpp"
#include "jit/kernel_builder.hpp"
#include "plan_spec_helpers.hpp"
#include "templates/moe_contract.cuh"

using namespace moejit;
using moejit::testing::constant_of;
using moejit::testing::occurrences;

TEST_CASE(
    "the fast atom's ring is 4 stages deep up to B = 8 (8 for B = 1's step owners, 5 for the unit schedule's pairs), "
    "5 up to B = 32, as deep as SMEM allows above, unless set") {
  const codegen::DeviceProfile h200 = codegen::builtin_profile("h200");
  for (const char* model : {"glm5.2", "dsv4.1-flash"}) {
    CAPTURE(std::string(model));
    const codegen::MoeConfig c = codegen::builtin_model(model);
    codegen::MoeCodegenOptions o;
    o.path = codegen::ComputePath::fast;
    const int deep = codegen::plan_launch(c, 33, h200, o).stages;
    CHECK(deep > 5);
    CHECK(codegen::plan_launch(c, 1, h200, o).stages == 8);  // the unit schedule's step owners
    o.consumer_groups = 2;  // the unit schedule on two warpgroups: its own measured depth
    CHECK(codegen::plan_launch(c, 1, h200, o).stages == 5);
    o.consumer_groups = 0;
    for (int b : {2, 3, 4, 5, 8}) {
      const codegen::MoeLaunchPlan plan = codegen::plan_launch(c, b, h200, o);
      CHECK(plan.stages == (plan.schedule == codegen::Schedule::units ? 5 : 4));  // (GLM5.2 B = 2 plans units)
    }
    for (int b : {9, 16, 32}) CHECK(codegen::plan_launch(c, b, h200, o).stages == 5);
    for (int b : {33, 64, 256}) CHECK(codegen::plan_launch(c, b, h200, o).stages == deep);
    o.stages = 6;
    CHECK(codegen::plan_launch(c, 1, h200, o).stages == 6);  // the options win
    o.stages = 3;  // fits the SMEM, but a step owner holds a stage a whole step: named as the owners' minimum
    CHECK_THROWS_WITH_AS(codegen::plan_launch(c, 1, h200, o),
                         doctest::Contains("stages = 3 is invalid for the unit schedule's step owners"),
                         codegen::ConfigError);
    CHECK(codegen::plan_launch(c, 2, h200, o).stages == 3);
    o.stages = 0;
    o.path = codegen::ComputePath::exact;  // measured for the fast atom only
    CHECK(codegen::plan_launch(c, 1, h200, o).stages == codegen::plan_launch(c, 8, h200, o).stages);
  }
}

TEST_CASE("GEMM1 runs paired split rows in the segments of at most kPairedRows rows up to the atom's measured B") {
  const codegen::DeviceProfile h200 = codegen::builtin_profile("h200");
  const int paired_max = codegen::find_atom(h200.target, codegen::ComputePath::fast)->paired_short_max_batch;
  CHECK(paired_max == 64);
  for (const bool shared : {false, true})
    for (const char* model : {"glm5.2", "dsv4.1-flash", "gpt-oss-120b"}) {
      CAPTURE(model);
      CAPTURE(shared);
      if (shared && std::string(model) == "gpt-oss-120b") continue;  // it has none
      const codegen::MoeConfig c = codegen::builtin_model(model, shared);
      // An expert draws at most B rows of a forward on one GPU from distinct routes (the shared expert exactly B;
      // repeats run more tiles of kPairedRows rows: ComputeRole::kTileRows): every segment pairs
      // up to B = kPairedRows; up to B = 8 the 8-column tiles cover every segment, and those of at most
      // kPairedRows rows pair; up to the atom's paired_short_max_batch the 16-column tiles pair their short ones.
      for (const int b : {1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 32, 64, 65, 128, 256}) {
        CAPTURE(b);
        const codegen::MoeLaunchPlan plan = codegen::plan_launch(c, b, h200);
        CHECK(plan.paired_rows == (b <= paired_max));
        CHECK(constant_of(codegen::moe_compute_spec(c, plan), "kPaired") ==
              (b <= contract::kPairedRows ? contract::kPairedAll
               : b <= paired_max          ? contract::kPairedShort
                                          : contract::kPairedNone));
        CHECK((plan.tile_n == 8) == (b <= 8));
        // The step owners run on paired rows only, and are planned where the unit schedule is at B = 1.
        if (plan.schedule == codegen::Schedule::units) CHECK(plan.groups == (b == 1 ? 3 : 2));
      }
      // A wider token tile asked for keeps the rows apart (the 16-column split), on two warpgroups at B = 1.
      const codegen::MoeLaunchPlan wide = codegen::plan_launch(c, 1, h200, {.tile_n = 16});
      CHECK_FALSE(wide.paired_rows);
      CHECK(wide.tile_n == 16);
      CHECK(wide.groups == 2);
      CHECK(constant_of(codegen::moe_compute_spec(c, wide), "kPaired") == 0);
      CHECK(codegen::plan_launch(c, 2, h200, {.tile_n = 8}).paired_rows);
      // Above B = 8 an 8-column tile asked for pairs the short segments in it as the planned 16 columns do.
      const codegen::MoeLaunchPlan narrow = codegen::plan_launch(c, 32, h200, {.tile_n = 8});
      CHECK(narrow.paired_rows);
      CHECK(constant_of(codegen::moe_compute_spec(c, narrow), "kPaired") == contract::kPairedShort);
      // Paths without split rows, and expert parallelism (an expert's rows come from every rank), do not pair, at
      // any B the fast path on one GPU pairs.
      codegen::MoeConfig ep = c;
      ep.ranks = 2;
      for (const int b : {1, 16, 64}) {
        CAPTURE(b);
        CHECK_FALSE(codegen::plan_launch(c, b, h200, {.path = codegen::ComputePath::exact}).paired_rows);
        if (!shared) CHECK_FALSE(codegen::plan_launch(ep, b, h200).paired_rows);
      }
    }
}

TEST_CASE("the token frame is planned for the fast path on one GPU from B = 9 where the weights' codes allow") {
  const codegen::DeviceProfile h200 = codegen::builtin_profile("h200");
  for (const char* model : {"glm5.2", "dsv4.1-flash", "gpt-oss-120b"}) {
    CAPTURE(model);
    const codegen::MoeConfig c = codegen::builtin_model(model);
    codegen::MoeConfig ep = c;
    ep.ranks = 2;
    for (const int b : {1, 2, 4, 8, 16, 64, 256}) {
      CAPTURE(b);
      for (const bool bf16 : {false, true}) {
        // Planned from the atom's token_frame_min_batch (9: the 16-column tiles); on sets it at any B.
        CHECK(codegen::plan_launch(c, b, h200, {.input_bf16 = bf16}).token_frame == (b >= 9));
        const codegen::MoeLaunchPlan plan = codegen::plan_launch(c, b, h200, {.input_bf16 = bf16, .token_frame = true});
        CHECK(plan.token_frame);
        // Both role kernels are specialized on it: the dispatch role shifts the rows, the compute role's GEMM1
        // promotion and epilogue read them so.
        CHECK(constant_of(codegen::moe_compute_spec(c, plan), "kTokenFrame") == 1);
        const std::optional<codegen::KernelSpec> dispatch = codegen::moe_dispatch_spec(c, plan);
        REQUIRE(dispatch);
        CHECK(constant_of(*dispatch, "kFrame") == 1);
        CHECK(plan.dispatch.grid == b);  // a CTA a token (B <= the dispatch role's 2 CTAs an SM)
      }
      // Off: the MX blocks, in both kernels.
      const codegen::MoeLaunchPlan off = codegen::plan_launch(c, b, h200, {.token_frame = false});
      CHECK_FALSE(off.token_frame);
      CHECK(constant_of(codegen::moe_compute_spec(c, off), "kTokenFrame") == 0);
      CHECK(constant_of(*codegen::moe_dispatch_spec(c, off), "kFrame") == 0);
      // Not planned: the exact path (no split rows), expert parallelism, weights with nonzero blocks of scale
      // code 0 (the K-loop's 2^-127) or a scale code above kFrameMaxWeightScaleCode (the frame's sums could
      // overflow FP32).
      CHECK_FALSE(codegen::plan_launch(c, b, h200, {.path = codegen::ComputePath::exact}).token_frame);
      CHECK_FALSE(codegen::plan_launch(ep, b, h200).token_frame);
      CHECK_FALSE(codegen::plan_launch(c, b, h200, {.subnormal_weight_scales = true}).token_frame);
      CHECK_FALSE(codegen::plan_launch(c, b, h200, {.wide_weight_scales = true}).token_frame);
    }
    // On where it cannot run is refused, naming the field and why.
    CHECK_THROWS_WITH_AS(codegen::plan_launch(c, 16, h200, {.wide_weight_scales = true, .token_frame = true}),
                         "token_frame = on is invalid here: the weights hold a scale code above "
                         "contract::kFrameMaxWeightScaleCode (allowed: off, or as planned)",
                         codegen::ConfigError);
    CHECK_THROWS_AS(codegen::plan_launch(ep, 16, h200, {.token_frame = true}), codegen::ConfigError);
    CHECK_THROWS_AS(codegen::plan_launch(c, 16, h200, {.path = codegen::ComputePath::exact, .token_frame = true}),
                    codegen::ConfigError);
    CHECK(codegen::plan_launch(c, 16, h200, {.token_frame = true}).token_frame);
  }
}

TEST_CASE("paired_rows on pairs the short segments of any token tile; off keeps every segment apart") {
  const codegen::DeviceProfile h200 = codegen::builtin_profile("h200");
  for (const char* model : {"glm5.2", "dsv4.1-flash"}) {
    CAPTURE(model);
    const codegen::MoeConfig c = codegen::builtin_model(model);
    // Above B = 8 the planned token tiles (16 columns) pair their segments of at most kPairedRows rows.
    for (const int b : {9, 16, 64, 256}) {
      CAPTURE(b);
      const codegen::MoeLaunchPlan on = codegen::plan_launch(c, b, h200, {.paired_rows = true});
      CHECK(on.paired_rows);
      CHECK(on.tile_n == codegen::plan_launch(c, b, h200, {.paired_rows = false}).tile_n);
      CHECK(constant_of(codegen::moe_compute_spec(c, on), "kPaired") == contract::kPairedShort);
      const codegen::MoeLaunchPlan off = codegen::plan_launch(c, b, h200, {.paired_rows = false});
      CHECK_FALSE(off.paired_rows);
      CHECK(constant_of(codegen::moe_compute_spec(c, off), "kPaired") == contract::kPairedNone);
    }
    // At B <= 8: off runs the planned 16-column split everywhere, on two warpgroups at B = 1 (no step owners);
    // on with a 16-column tile asked for pairs the short segments of it.
    for (int b = 1; b <= 8; ++b) {
      CAPTURE(b);
      const codegen::MoeLaunchPlan off = codegen::plan_launch(c, b, h200, {.paired_rows = false});
      CHECK_FALSE(off.paired_rows);
      CHECK(off.tile_n == 16);
      if (off.schedule == codegen::Schedule::units) CHECK(off.groups == 2);
      const codegen::MoeLaunchPlan wide = codegen::plan_launch(c, b, h200, {.tile_n = 16, .paired_rows = true});
      CHECK(wide.paired_rows);
      CHECK(wide.tile_n == 16);
      CHECK(constant_of(codegen::moe_compute_spec(c, wide), "kPaired") == contract::kPairedShort);
      if (wide.schedule == codegen::Schedule::units) CHECK(wide.groups == 2);
    }
    // Paths without split rows, and expert parallelism, refuse it, naming the field.
    CHECK_THROWS_WITH_AS(
        codegen::plan_launch(c, 16, h200, {.path = codegen::ComputePath::exact, .paired_rows = true}),
        "paired_rows = on is invalid on the sm90-bf16-mma atom: GEMM1's rows pair on the sm90-fp8-wgmma atom's split "
        "rows, on one GPU (allowed: off, or as planned)",
        codegen::ConfigError);
    codegen::MoeConfig ep = c;
    ep.ranks = 2;
    CHECK_THROWS_AS(codegen::plan_launch(ep, 16, h200, {.paired_rows = true}), codegen::ConfigError);
    CHECK_FALSE(codegen::plan_launch(ep, 16, h200, {.paired_rows = false}).paired_rows);
    // The step owners run on paired rows: off with three warpgroups of the unit schedule is refused, naming it.
    CHECK_THROWS_WITH_AS(
        codegen::plan_launch(c, 1, h200,
                             {.consumer_groups = 3, .schedule = codegen::Schedule::units, .paired_rows = false}),
        "paired_rows = off is invalid with schedule = units on 3 consumer warpgroups: their step "
        "owners run GEMM1 on paired rows (allowed: on, or as planned; or consumer_groups = 2)",
        codegen::ConfigError);
  }
  // The kernels that pair in 16-column tiles hold three GEMM1 loops: they compile within the plan, without spills.
  for (const char* model : {"glm5.2", "dsv4.1-flash"})
    for (const int b : {16, 256}) {
      CAPTURE(model);
      CAPTURE(b);
      const codegen::MoeConfig c = codegen::builtin_model(model);
      const codegen::MoeLaunchPlan plan = codegen::plan_launch(c, b, h200, {.paired_rows = true});
      const codegen::KernelSpec spec = codegen::moe_compute_spec(c, plan);
      const jit::BuildArtifacts built = jit::build_kernel(spec);
      const codegen::KernelResources* res = built.resources.find(spec.entry_name());
      REQUIRE(res);
      CHECK(res->registers <= plan.compute.register_cap);
      CHECK(res->spill_store_bytes == 0);
      CHECK(res->local_bytes == 0);
      // Its MMAs: the paired GEMM1 (8 columns), GEMM1 split on 16 and 32 columns.
      for (const char* mma : {"m64n8k32", "m64n16k32", "m64n32k32"})
        CHECK(built.final_ptx.find(mma) != std::string::npos);
    }
}

TEST_CASE(
    "a step of at most 32 schedule routes gets its routing tables from one warp up to B = 4, the kernel only those") {
  // route_tables_warp matches each route's expert across the warp (match.any); the block's tables count the routes
  // with shared atomics. A kernel compiles the planned builder alone: both beside each other moved the stream
  // kernels' allocation at their register cap into spills (codegen/plan_schedule.cpp, plan_routing).
  const codegen::DeviceProfile h200 = codegen::builtin_profile("h200");
  for (const char* model : {"glm5.2", "dsv4.1-flash"}) {
    CAPTURE(model);
    const codegen::MoeConfig c = codegen::builtin_model(model);
    for (const int b : {1, 2, 3, 4, 5, 8, 64}) {
      CAPTURE(b);
      const codegen::MoeLaunchPlan plan = codegen::plan_launch(c, b, h200);
      CHECK(plan.warp_tables == (b <= 4));  // B k <= 32 for k <= 8; the stream kernels spill with it above B = 4
      CHECK(constant_of(codegen::moe_compute_spec(c, plan), "kWarpTables") == (plan.warp_tables ? 1 : 0));
    }
  }
  const codegen::MoeConfig glm = codegen::builtin_model("glm5.2");
  auto builders = [&](const codegen::MoeLaunchPlan& plan) {
    const std::string ptx = jit::build_kernel(codegen::moe_compute_spec(glm, plan)).final_ptx;
    return std::pair{ptx.find("match.any.sync") != std::string::npos,
                     ptx.find("atom.shared.add.u32") != std::string::npos};
  };
  // The unit schedule's kernel (B = 1) and a stream kernel (B = 4): the warp's alone; B = 8: the block's alone.
  CHECK(codegen::plan_launch(glm, 1, h200).schedule == codegen::Schedule::units);
  CHECK(builders(codegen::plan_launch(glm, 1, h200)) == std::pair{true, false});
  CHECK(codegen::plan_launch(glm, 4, h200).schedule == codegen::Schedule::stream);
  CHECK(builders(codegen::plan_launch(glm, 4, h200)) == std::pair{true, false});
  CHECK(builders(codegen::plan_launch(glm, 8, h200)) == std::pair{false, true});
  CHECK(builders(codegen::plan_launch(glm, 4, h200, {.warp_tables = false})) == std::pair{false, true});
  // The fused shared expert's route counts: GLM5.2 B = 4 has 33, so the block's; B = 3 25.
  codegen::MoeConfig shared = glm;
  shared.shared_expert = codegen::SharedExpert{};
  CHECK_FALSE(codegen::plan_launch(shared, 4, h200).warp_tables);
  CHECK(codegen::plan_launch(shared, 3, h200).warp_tables);
  // Expert parallelism's routes come from every rank: the block's.
  codegen::MoeConfig ep = glm;
  ep.ranks = 2;
  CHECK_FALSE(codegen::plan_launch(ep, 1, h200).warp_tables);
  // On sets it wherever the routes fit a warp (DSV4.1-Flash B = 5: 30), and is refused where they do not.
  const codegen::MoeConfig dsv = codegen::builtin_model("dsv4.1-flash");
  CHECK_FALSE(codegen::plan_launch(dsv, 5, h200).warp_tables);
  CHECK(codegen::plan_launch(dsv, 5, h200, {.warp_tables = true}).warp_tables);
  CHECK_THROWS_WITH_AS(
      codegen::plan_launch(glm, 5, h200, {.warp_tables = true}),
      "warp_tables = on is invalid here: 40 schedule routes > 32 (a lane a route) (allowed: off, or as "
      "planned)",
      codegen::ConfigError);
  CHECK_THROWS_AS(codegen::plan_launch(ep, 1, h200, {.warp_tables = true}), codegen::ConfigError);
}

TEST_CASE("PDL between the roles is planned up to B = 4 on the fast atom and B = 2 on the exact one, one GPU") {
  const codegen::DeviceProfile h200 = codegen::builtin_profile("h200");
  for (const char* model : {"glm5.2", "dsv4.1-flash", "gpt-oss-120b"}) {
    CAPTURE(model);
    const codegen::MoeConfig c = codegen::builtin_model(model);
    CHECK(codegen::plan_launch(c, 1, h200).pdl);
    CHECK(codegen::plan_launch(c, 2, h200).pdl);
    CHECK(codegen::plan_launch(c, 4, h200).pdl);
    CHECK_FALSE(codegen::plan_launch(c, 5, h200).pdl);
    CHECK_FALSE(codegen::plan_launch(c, 256, h200).pdl);
    const codegen::MoeCodegenOptions exact{.path = codegen::ComputePath::exact};
    CHECK(codegen::plan_launch(c, 1, h200, exact).pdl);
    CHECK(codegen::plan_launch(c, 2, h200, exact).pdl);
    CHECK_FALSE(codegen::plan_launch(c, 3, h200, exact).pdl);
    CHECK_FALSE(codegen::plan_launch(c, 4, h200, exact).pdl);  // measured faster on one model, slower on the other
    codegen::MoeConfig w4a16 = c;
    w4a16.recipe = codegen::Recipe::w4a16;
    CHECK_FALSE(codegen::plan_launch(w4a16, 1, h200).pdl);  // not measured on W4A16's atom
    codegen::MoeConfig ep = c;
    ep.ranks = 2;
    CHECK_FALSE(codegen::plan_launch(ep, 1, h200).pdl);  // the ranks' dispatch protocol, not measured with it
  }
}

TEST_CASE("decoded scales add a decoder warp, in place of an activation warp, and its SMEM to the fast atom's kernel") {
  const codegen::MoeConfig glm = codegen::builtin_model("glm5.2");
  const codegen::DeviceProfile h200 = codegen::builtin_profile("h200");
  codegen::MoeCodegenOptions o;
  o.path = codegen::ComputePath::fast;
  const codegen::MoeLaunchPlan plain = codegen::plan_launch(glm, 32, h200, o);
  o.decoded_scales = true;
  const codegen::MoeLaunchPlan plan = codegen::plan_launch(glm, 32, h200, o);
  CHECK_FALSE(plain.decoded_scales);
  CHECK(plan.decoded_scales);
  // 12 consumer warps, the weight warp and the decoder leave a row of 16 two activation warps (not three).
  CHECK(plan.compute.threads == plain.compute.threads);
  CHECK(plan.activation_warps == plain.activation_warps - 1);
  CHECK(plan.compute.register_cap == plain.compute.register_cap);
  // FP32 scales of every weight row and token column of a stage: 16 B each, and a barrier.
  const auto layout = contract::compute_smem_layout(plan.contract_path, plan.groups, plan.tiles, plan.tile_n,
                                                    plan.stages, glm.weight_experts(), plan.compute.grid, true);
  CHECK(layout.xdec - layout.wdec == 16 * plan.stages * plan.tiles * 64);
  CHECK(layout.amax - layout.xdec == 16 * plan.stages * plan.tile_n);
  CHECK(plan.compute.smem_bytes == layout.total);
  CHECK(plan.stages <= plain.stages);
  CHECK(constant_of(codegen::moe_compute_spec(glm, plan), "kDecoded") == 1);
  CHECK(constant_of(codegen::moe_compute_spec(glm, plain), "kDecoded") == 0);
  CHECK(plan.dispatch == plain.dispatch);
  CHECK(plan.finalize == plain.finalize);
  CHECK(plan.workspace_bytes == plain.workspace_bytes);

  o.path = codegen::ComputePath::exact;
  CHECK_THROWS_WITH_AS(codegen::plan_launch(glm, 8, h200, o),
                       "decoded_scales = true is invalid for the sm90-bf16-mma atom: only the sm90-fp8-wgmma atom "
                       "reads UE8M0 scale words in its K-loop",
                       codegen::ConfigError);
}

TEST_CASE("subnormal weight scales: the fast atom's K-loop decodes code 0 as 2^-127 only when the weights need it") {
  const codegen::MoeConfig glm = codegen::builtin_model("glm5.2");
  const codegen::DeviceProfile h200 = codegen::builtin_profile("h200");
  codegen::MoeCodegenOptions o;
  const codegen::MoeLaunchPlan flushed = codegen::plan_launch(glm, 8, h200, o);
  o.subnormal_weight_scales = true;
  const codegen::MoeLaunchPlan subnormal = codegen::plan_launch(glm, 8, h200, o);
  CHECK_FALSE(flushed.subnormal_weight_scales);
  CHECK(subnormal.subnormal_weight_scales);
  const codegen::KernelSpec a = codegen::moe_compute_spec(glm, flushed), b = codegen::moe_compute_spec(glm, subnormal);
  CHECK(constant_of(a, "kSubnormalScales") == 0);
  CHECK(constant_of(b, "kSubnormalScales") == 1);
  CHECK(a.summary() != b.summary());            // two kernels, two cache entries
  CHECK(flushed.compute == subnormal.compute);  // the same geometry
  // 2^-127 is 0x00400000: the subnormal kernel raises every weight scale code 0 to it in its K-loops, the other
  // only the activation scales it decodes where they are staged.
  CHECK(occurrences(jit::build_kernel(b).final_ptx, "4194304") >
        occurrences(jit::build_kernel(a).final_ptx, "4194304"));
  // The other atoms do not read codes this way: the option changes nothing there.
  o.path = codegen::ComputePath::exact;
  const codegen::MoeLaunchPlan exact = codegen::plan_launch(glm, 8, h200, o);
  CHECK_FALSE(exact.subnormal_weight_scales);
  CHECK(constant_of(codegen::moe_compute_spec(glm, exact), "kSubnormalScales") == 0);
}
