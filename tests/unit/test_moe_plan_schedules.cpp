// The launch plan's schedules and that the kernels carry them: the unit
// schedule (two warpgroups, or three step owners; its finalize grid and where
// a forward ends), the item schedule on the exact path's atoms. No GPU: the
// planner, the kernel specs and the assembled kernels. (Their GPU cases:
// tests/gpu/test_moe_schedules_gpu.cpp and test_trace_gpu.cpp.)
#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include "codegen/moe_kernels.hpp"
#include "codegen/plan_steps.hpp"
#include "codegen/planner.hpp"
#include "jit/kernel_builder.hpp"
#include "plan_spec_helpers.hpp"
#include "templates/moe_contract.cuh"

using namespace moejit;
using moejit::testing::constant_of;
using moejit::testing::occurrences;

TEST_CASE(
    "the unit schedule: items of 4 tiles on two warpgroups or three step owners, a finalize warp per route, refused "
    "where it cannot run") {
  const codegen::DeviceProfile h200 = codegen::builtin_profile("h200");
  for (const bool shared : {false, true})
    for (const char* model : {"glm5.2", "dsv4.1-flash"}) {
      CAPTURE(model);
      CAPTURE(shared);
      const codegen::MoeConfig c = codegen::builtin_model(model, shared);
      codegen::MoeCodegenOptions o;
      o.path = codegen::ComputePath::fast;
      o.schedule = codegen::Schedule::stream;
      const codegen::MoeLaunchPlan stream = codegen::plan_launch(c, 8, h200, o);
      o.schedule = codegen::Schedule::units;
      for (int b = 1; b <= contract::kUnitTokens; ++b) {
        const codegen::MoeLaunchPlan plan = codegen::plan_launch(c, b, h200, o);
        CHECK(plan.schedule == codegen::Schedule::units);
        CHECK(plan.groups == (b == 1 ? 3 : 2));  // the atom's unit_groups up to its unit_max_batch, then pairs
        CHECK(plan.tiles == contract::kUnitTiles);
        CHECK(plan.finalize.grid == b * ((c.hidden + 127) / 128));
        CHECK(plan.finalize.threads == 32 * (c.top_k + (shared ? 1 : 0)));
        CHECK(plan.workspace_bytes == stream.workspace_bytes);  // one workspace for every schedule and batch
        CHECK(contract::unit_partials_fit(codegen::workspace_dims(c, plan.contract_path), plan.compute.grid, b));
        CHECK(constant_of(codegen::moe_compute_spec(c, plan), "kSchedule") == contract::kScheduleUnits);
        CHECK(constant_of(codegen::moe_finalize_spec(c, plan), "kSchedule") == contract::kScheduleUnits);
        CHECK(constant_of(codegen::moe_finalize_spec(c, plan), "kGrid") == plan.compute.grid);
      }
      CHECK(stream.schedule == codegen::Schedule::stream);
      CHECK(constant_of(codegen::moe_compute_spec(c, stream), "kSchedule") == contract::kScheduleStream);
      CHECK(constant_of(codegen::moe_finalize_spec(c, stream), "kGrid") == 0);
      CHECK_THROWS_AS(codegen::plan_launch(c, 16, h200, o), codegen::ConfigError);
      // Three warpgroups own whole steps: 4 tiles a step, 8-column token tiles, the owners' reduction in SMEM.
      o.consumer_groups = 3;
      for (int b = 1; b <= contract::kUnitTokens; ++b) {
        const codegen::MoeLaunchPlan plan = codegen::plan_launch(c, b, h200, o);
        CHECK(plan.groups == 3);
        CHECK(plan.tiles == contract::kUnitTiles);
        CHECK(plan.tile_n == 8);
        CHECK(plan.stages == 8);
        CHECK(plan.activation_warps == 3);  // 12 consumer warps and the weight warp: 3 of a row of 16 left
        CHECK(plan.compute.threads == contract::compute_threads(3, false, 3));
        CHECK(plan.compute.threads == 512);
        CHECK(plan.compute.register_cap == 128);
        CHECK(contract::step_owners(plan.groups, plan.tiles));
        const auto layout = contract::compute_smem_layout(plan.contract_path, plan.groups, plan.tiles, plan.tile_n,
                                                          plan.stages, c.weight_experts(), plan.compute.grid);
        CHECK(layout.active - layout.reduce == 2 * 2 * 2 * 4 * 128 * 4);  // [pair][source][tile][N / 2][thread]
        CHECK(constant_of(codegen::moe_compute_spec(c, plan), "kGroups") == 3);
      }
      o.tile_n = 16;
      CHECK_THROWS_WITH_AS(codegen::plan_launch(c, 1, h200, o),
                           "tile_n = 16 is invalid with schedule = units on 3 consumer warpgroups: their step owners "
                           "run 8-column token tiles (allowed: 8)",
                           codegen::ConfigError);
      o.tile_n = 0;
      o.consumer_groups = 2;  // a pair of tiles a warpgroup: no reduction, GEMM1 on paired rows as planned at B = 1
      const codegen::MoeLaunchPlan pairs = codegen::plan_launch(c, 1, h200, o);
      CHECK(pairs.groups == 2);
      CHECK(pairs.tiles == contract::kUnitTiles);
      CHECK(pairs.tile_n == 8);
      CHECK(pairs.paired_rows);
      CHECK_FALSE(contract::step_owners(pairs.groups, pairs.tiles));
      CHECK(contract::owner_reduce_bytes(pairs.groups, pairs.tiles, pairs.tile_n) == 0);
      o.consumer_groups = 1;
      CHECK_THROWS_AS(codegen::plan_launch(c, 1, h200, o), codegen::ConfigError);
      o.consumer_groups = 0;
      o.path = codegen::ComputePath::exact;
      CHECK_THROWS_AS(codegen::plan_launch(c, 1, h200, o), codegen::ConfigError);
    }
  const codegen::MoeConfig glm = codegen::builtin_model("glm5.2");
  // Planned at B = 1 (the atom's measured range) on the fast path of one GPU, unless the options ask for what it
  // does not run.
  CHECK(codegen::plan_launch(glm, 1, h200).schedule == codegen::Schedule::units);
  CHECK(codegen::plan_launch(codegen::builtin_model("dsv4.1-flash", true), 1, h200).schedule ==
        codegen::Schedule::units);
  // At B = 2 where whole units balance the grid (the expected active experts' units over its rounds): GLM5.2's
  // 16 experts x 16 units fill two rounds of 132 CTAs to 0.95, on two warpgroups; DSV4.1-Flash's 11.9 x 18 to
  // 0.81, and the shared expert makes GLM5.2's 17 x 16 three rounds (0.69).
  CHECK(codegen::expected_unit_balance(glm, 2, 132) == doctest::Approx(15.75 * 16 / 264).epsilon(1e-3));
  CHECK(codegen::expected_unit_balance(codegen::builtin_model("dsv4.1-flash"), 2, 132) ==
        doctest::Approx(11.906 * 18 / 264).epsilon(1e-3));
  CHECK(codegen::expected_unit_balance(codegen::builtin_model("glm5.2", true), 2, 132) ==
        doctest::Approx(16.75 * 16 / 396).epsilon(1e-3));
  const codegen::MoeLaunchPlan glm2 = codegen::plan_launch(glm, 2, h200);
  CHECK(glm2.schedule == codegen::Schedule::units);
  CHECK(glm2.groups == 2);
  CHECK(glm2.stages == 5);
  const codegen::MoeLaunchPlan dsv2 = codegen::plan_launch(codegen::builtin_model("dsv4.1-flash"), 2, h200);
  CHECK(dsv2.schedule == codegen::Schedule::stream);
  CHECK(std::count(dsv2.notes.begin(), dsv2.notes.end(),
                   "schedule stream: each phase's K128 steps split evenly over the CTAs (the unit schedule's "
                   "expected balance over 132 CTAs is 0.81 < 0.9)") == 1);
  CHECK(codegen::plan_launch(codegen::builtin_model("glm5.2", true), 2, h200).schedule == codegen::Schedule::stream);
  CHECK(codegen::plan_launch(glm, 3, h200).schedule == codegen::Schedule::stream);
  CHECK(codegen::plan_launch(glm, 1, h200, {.path = codegen::ComputePath::exact}).schedule ==
        codegen::Schedule::items);  // the exact atom's own small-B schedule (below)
  CHECK(codegen::plan_launch(glm, 1, h200, {.consumer_groups = 1}).schedule == codegen::Schedule::stream);
  CHECK(codegen::plan_launch(glm, 1, h200, {.consumer_groups = 3}).schedule == codegen::Schedule::units);
  CHECK(codegen::plan_launch(glm, 1, h200, {.decoded_scales = true}).schedule == codegen::Schedule::stream);
  CHECK(codegen::plan_launch(glm, 1, h200, {.schedule = codegen::Schedule::stream}).schedule ==
        codegen::Schedule::stream);
  // Step owners are planned at B = 1 (the atom's unit_max_batch); a forced unit schedule runs two warpgroups
  // above, and asking for three where they cannot pair every segment (B > contract::kPairedRows) is refused.
  const codegen::MoeConfig small = codegen::builtin_model("gpt-oss-20b");
  const int above = contract::kPairedRows + 1;
  REQUIRE(codegen::plan_launch(small, above, h200, {.schedule = codegen::Schedule::units}).schedule ==
          codegen::Schedule::units);
  CHECK(codegen::plan_launch(small, above, h200, {.schedule = codegen::Schedule::units}).groups == 2);
  CHECK(codegen::plan_launch(small, contract::kPairedRows, h200, {.schedule = codegen::Schedule::units}).groups == 2);
  CHECK(codegen::plan_launch(small, 1, h200, {.schedule = codegen::Schedule::units}).groups == 3);
  CHECK_THROWS_WITH_AS(
      codegen::plan_launch(small, above, h200, {.consumer_groups = 3, .schedule = codegen::Schedule::units}),
      "consumer_groups = 3 is invalid with schedule = units at B = 5: the step owners pair at most 4 token rows "
      "(B <= 4; 2 warpgroups run the schedule at any B it fits)",
      codegen::ConfigError);
  codegen::MoeConfig ranks2 = glm;
  ranks2.ranks = 2;
  CHECK(codegen::plan_launch(ranks2, 1, h200).schedule == codegen::Schedule::stream);
  codegen::MoeCodegenOptions o;
  o.schedule = codegen::Schedule::units;
  CHECK_THROWS_WITH_AS(
      codegen::plan_launch(glm, 1, h200, {.schedule = codegen::Schedule::units, .decoded_scales = true}),
      "schedule = units is invalid with decoded_scales = true: the unit schedule has not been run "
      "with a decoder warp",
      codegen::ConfigError);
  CHECK_THROWS_WITH_AS(codegen::plan_launch(glm, 16, h200, o),
                       "schedule = units is invalid at B = 16: its partial rows take 50331648 B and the workspace "
                       "holds 12976128 B for them (B <= 4)",
                       codegen::ConfigError);
  CHECK_THROWS_WITH_AS(
      codegen::plan_launch(glm, 1, h200, {.path = codegen::ComputePath::exact, .schedule = codegen::Schedule::units}),
      "schedule = units is invalid for the sm90-bf16-mma atom: only the sm90-fp8-wgmma atom on one "
      "GPU runs it",
      codegen::ConfigError);
  codegen::MoeConfig ep = glm;
  ep.ranks = 2;
  CHECK_THROWS_WITH_AS(codegen::plan_launch(ep, 1, h200, o),
                       "schedule = units is invalid for the sm90-fp8-wgmma atom with expert parallelism: only the "
                       "sm90-fp8-wgmma atom on one GPU runs it",
                       codegen::ConfigError);
}

TEST_CASE("the item schedule: planned for the exact atom at B = 1, asked for on the exact path's atoms") {
  const codegen::DeviceProfile h200 = codegen::builtin_profile("h200");
  const codegen::MoeCodegenOptions exact{.path = codegen::ComputePath::exact};
  for (const char* model : {"glm5.2", "dsv4.1-flash", "gpt-oss-120b"}) {
    CAPTURE(model);
    const codegen::MoeConfig c = codegen::builtin_model(model);
    // Measured at B = 1 only (its atom row's item_max_batch); stream from B = 2.
    const codegen::MoeLaunchPlan one = codegen::plan_launch(c, 1, h200, exact);
    CHECK(one.schedule == codegen::Schedule::items);
    CHECK(constant_of(codegen::moe_compute_spec(c, one), "kSchedule") == contract::kScheduleItems);
    // Finalize is the stream schedule's kernel: nothing of it depends on how the items were dealt.
    CHECK(constant_of(codegen::moe_finalize_spec(c, one), "kSchedule") == contract::kScheduleStream);
    CHECK(codegen::moe_finalize_spec(c, one) ==
          codegen::moe_finalize_spec(
              c, codegen::plan_launch(c, 1, h200,
                                      {.path = codegen::ComputePath::exact, .schedule = codegen::Schedule::stream})));
    CHECK(std::count(one.notes.begin(), one.notes.end(),
                     "schedule items (B <= 1, the sm90-bf16-mma atom's measured range): whole items dealt "
                     "round-robin over the CTAs, GEMM1's then GEMM2's; none is cut, so no CTA adds another's "
                     "partial sums") == 1);
    CHECK(codegen::plan_launch(c, 2, h200, exact).schedule == codegen::Schedule::stream);
    // Not the fast atoms (sm_90a's weighs its steps by token tile width, which whole items dealt round-robin do
    // not; sm_120a's has not run it).
    CHECK(codegen::plan_launch(c, 1, h200).schedule != codegen::Schedule::items);
    // Asked for: any B on the exact atoms (W4A16's too, which does not plan it: not measured there).
    const codegen::MoeLaunchPlan asked =
        codegen::plan_launch(c, 64, h200, {.path = codegen::ComputePath::exact, .schedule = codegen::Schedule::items});
    CHECK(asked.schedule == codegen::Schedule::items);
    CHECK(constant_of(codegen::moe_compute_spec(c, asked), "kSchedule") == contract::kScheduleItems);
    codegen::MoeConfig w4a16 = c;
    w4a16.recipe = codegen::Recipe::w4a16;
    CHECK(codegen::plan_launch(w4a16, 1, h200).schedule == codegen::Schedule::stream);
    CHECK(codegen::plan_launch(w4a16, 1, h200, {.schedule = codegen::Schedule::items}).schedule ==
          codegen::Schedule::items);
  }
  const codegen::MoeConfig glm = codegen::builtin_model("glm5.2");
  CHECK_THROWS_WITH_AS(codegen::plan_launch(glm, 1, h200, {.schedule = codegen::Schedule::items}),
                       "schedule = items is invalid for the sm90-fp8-wgmma atom: it runs on the sm_90a exact path's "
                       "atoms on one GPU (allowed here: stream, or empty as planned)",
                       codegen::ConfigError);
  CHECK_THROWS_WITH_AS(
      codegen::plan_launch(glm, 1, codegen::builtin_profile("rtx-pro-5000"), {.schedule = codegen::Schedule::items}),
      "schedule = items is invalid for the sm120-mxf8f6f4 atom: it runs on the sm_90a exact path's atoms on one GPU "
      "(allowed here: stream, or empty as planned)",
      codegen::ConfigError);
  codegen::MoeConfig ep = glm;
  ep.ranks = 2;
  CHECK(codegen::plan_launch(ep, 1, h200, exact).schedule == codegen::Schedule::stream);
  CHECK_THROWS_WITH_AS(
      codegen::plan_launch(ep, 1, h200, {.path = codegen::ComputePath::exact, .schedule = codegen::Schedule::items}),
      "schedule = items is invalid for the sm90-bf16-mma atom with expert parallelism: it runs on the sm_90a exact "
      "path's atoms on one GPU (allowed here: stream, or empty as planned)",
      codegen::ConfigError);
  for (const codegen::Schedule s : {codegen::Schedule::stream, codegen::Schedule::units, codegen::Schedule::items})
    CHECK(codegen::parse_schedule(codegen::schedule_name(s)) == s);
  CHECK_FALSE(codegen::parse_schedule("item").has_value());
}

TEST_CASE("a forward on the unit schedule ends in the finalize grid, on the stream schedule in the last compute CTA") {
  // The last CTA out counts itself with an atomic on the header's `done` and resets the readiness counters and
  // the epoch; on the unit schedule the finalize grid stores them instead (moe_finalize.cuh, end_forward), so no
  // compute CTA waits on fences and an atomic after its last store.
  const codegen::MoeConfig glm = codegen::builtin_model("glm5.2");
  const codegen::DeviceProfile h200 = codegen::builtin_profile("h200");
  for (int batch : {1, 3}) {
    CAPTURE(batch);
    const codegen::MoeLaunchPlan plan = codegen::plan_launch(glm, batch, h200);
    const bool units = plan.schedule == codegen::Schedule::units;
    CHECK(units == (batch == 1));
    const std::string compute = jit::build_kernel(codegen::moe_compute_spec(glm, plan)).final_ptx;
    const std::string finalize = jit::build_kernel(codegen::moe_finalize_spec(glm, plan)).final_ptx;
    CHECK(occurrences(compute, "atom.global.add.u32") == (units ? 0 : 1));
    // end_forward's stores: the counters and the epoch (the combine itself stores y in vectors).
    CHECK((occurrences(finalize, "st.global.u32") > 0) == units);
  }
}
