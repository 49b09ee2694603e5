// The compute role's geometry as the planner sets it on the H200's fast atom: consumer warpgroups and tiles per
// item, the activation producer's warps, H and I padded to the step widths, and a caller's overrides refused
// where they do not fit (the configuration's ranges: test_planner_config.cpp).
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <utility>

#include "codegen/moe_launch_plan.hpp"
#include "codegen/planner.hpp"

using namespace moejit::codegen;

namespace {
MoeConfig glm(int ranks = 8) {
  MoeConfig c = builtin_model("glm5.2");
  c.ranks = ranks;
  return c;
}
}  // namespace

TEST_CASE("the fast atom runs items of 6 tiles over 3 warpgroups, a shorter last one, and 2 warpgroups across ranks") {
  const auto noted = [](const MoeLaunchPlan& p, const std::string& text) {
    return std::any_of(p.notes.begin(), p.notes.end(),
                       [&](const std::string& n) { return n.find(text) != std::string::npos; });
  };
  const MoeLaunchPlan one = plan_launch(glm(1), 8, builtin_profile("h200"), {});
  CHECK(one.groups == 3);
  CHECK(one.tiles == 6);
  CHECK(one.compute.threads == 512);  // 12 consumer warps, the weight warp and 3 activation warps
  CHECK(one.compute.register_cap == 128);
  // 2I = 4096 rows: ten items of six 64-row tiles and one of four; H = 6144: sixteen items.
  CHECK(noted(one, "a token tile's last item has 4 (GEMM1, 4096 rows) and 6 (GEMM2, 6144 rows)"));
  const MoeLaunchPlan ep = plan_launch(glm(8), 8, builtin_profile("h200"), {});
  CHECK(ep.groups == 2);
  CHECK(ep.tiles == 4);
  CHECK(ep.compute.threads == 384);  // 8 consumer warps, the weight warp and 3 activation warps
  CHECK(noted(ep, "expert parallelism: 2 consumer warpgroups, not the atom's 3"));
}

TEST_CASE("consumer_groups sets the fast atom's warpgroups, and is refused where an atom runs its own count only") {
  MoeCodegenOptions o;
  o.consumer_groups = 2;
  const MoeLaunchPlan two = plan_launch(glm(1), 8, builtin_profile("h200"), o);
  CHECK(two.groups == 2);
  CHECK(two.tiles == 4);  // two tiles a warpgroup, as the atom's three
  CHECK(two.compute.threads == 384);
  o.consumer_groups = 3;
  CHECK(plan_launch(glm(8), 8, builtin_profile("h200"), o).groups == 3);  // the options win over the EP rule
  o.consumer_groups = 4;
  CHECK_THROWS_WITH_AS(plan_launch(glm(1), 8, builtin_profile("h200"), o),
                       "consumer_groups = 4 is outside the allowed range [1, 3] (0: as planned)", ConfigError);
  o.consumer_groups = 2;
  o.path = ComputePath::exact;
  CHECK_THROWS_WITH_AS(plan_launch(glm(1), 8, builtin_profile("h200"), o),
                       "consumer_groups = 2 is invalid for the sm90-bf16-mma atom: it runs 1 warpgroup(s) of one tile "
                       "each (0: as planned)",
                       ConfigError);
}

TEST_CASE("the activation producer takes the warps the CTAs leave free on the schedulers, and no registers") {
  // One CTA of 3 consumer warpgroups and the weight warp: 13 warps of a row of 16; of 2 warpgroups, 9 of 12.
  CHECK(moejit::contract::activation_warps(3, false, 1) == 3);
  CHECK(moejit::contract::activation_warps(2, false, 1) == 3);
  CHECK(moejit::contract::activation_warps(3, true, 1) == 2);  // the decoder takes one
  CHECK(moejit::contract::activation_warps(1, false, 1) == 3);
  // Three CTAs of one warpgroup (the exact path across ranks): 18 warps on 20 slots, one more each would take 21.
  CHECK(moejit::contract::activation_warps(1, false, 3) == 1);
  CHECK(moejit::contract::activation_warps(1, false, 2) == 1);  // 12 warps on 12 slots
  for (int groups = 1; groups <= moejit::contract::kMaxGroups; ++groups)
    for (int ctas = 1; ctas <= 4; ++ctas)
      for (const bool decoded : {false, true}) {
        const int a = moejit::contract::activation_warps(groups, decoded, ctas);
        const auto per_scheduler = [&](int act) {
          return (ctas * moejit::contract::compute_threads(groups, decoded, act) / 32 + 3) / 4;
        };
        CHECK(a >= 1);
        CHECK(a <= moejit::contract::kMaxActivationWarps);
        CHECK(per_scheduler(a) == per_scheduler(1));
        if (a < moejit::contract::kMaxActivationWarps) CHECK(per_scheduler(a + 1) > per_scheduler(1));
      }
  const DeviceProfile h200 = builtin_profile("h200");
  const MoeLaunchPlan planned = plan_launch(glm(1), 8, h200, {});
  CHECK(planned.activation_warps == 3);
  const auto noted = [](const MoeLaunchPlan& p, const std::string& text) {
    return std::any_of(p.notes.begin(), p.notes.end(),
                       [&](const std::string& n) { return n.find(text) != std::string::npos; });
  };
  CHECK(noted(planned,
              "activation producer: 3 warps taking turns by K128 step: the 2 beyond the first give no "
              "scheduler more warps than 1 CTA(s) of 3 consumer warpgroup(s) do"));
  CHECK(planned.compute.register_cap == 128);
  MoeCodegenOptions o;
  o.activation_warps = 1;  // the A/B knob: one warp, as before
  const MoeLaunchPlan one = plan_launch(glm(1), 8, h200, o);
  CHECK(one.activation_warps == 1);
  CHECK(one.compute.threads == planned.compute.threads - 64);
  CHECK(one.compute.register_cap == 128);
  // Warps taking turns wait for their own stages only: a ring must hold them and the consumers' release lag (the
  // step owners free a step after the two they pass: a completed release says nothing of the two before it), or
  // be a multiple of them (each warp then waited for the same stage's previous round itself).
  CHECK(moejit::contract::activation_warps_fit(3, 3, false));
  CHECK(moejit::contract::activation_warps_fit(4, 4, false));
  CHECK_FALSE(moejit::contract::activation_warps_fit(3, 2, false));
  CHECK_FALSE(moejit::contract::activation_warps_fit(3, 4, true));
  CHECK_FALSE(moejit::contract::activation_warps_fit(3, 5, true));  // 3 + 3 > 5, and 5 is no multiple of 3
  CHECK_FALSE(moejit::contract::activation_warps_fit(4, 6, true));
  CHECK(moejit::contract::activation_warps_fit(3, 6, true));
  CHECK(moejit::contract::activation_warps_fit(2, 4, true));  // a multiple
  CHECK(moejit::contract::activation_warps_fit(2, 5, true));
  CHECK(moejit::contract::activation_warps_fit(4, 8, true));
  MoeCodegenOptions shallow;
  for (const int stages : {4, 5}) {  // B = 1 runs the step owners
    CAPTURE(stages);
    shallow.stages = stages;
    const MoeLaunchPlan owners = plan_launch(glm(1), 1, h200, shallow);
    CHECK(owners.schedule == Schedule::units);
    CHECK(owners.activation_warps == 2);
    CHECK(owners.compute.threads == moejit::contract::compute_threads(3, false, 2));
    CHECK(noted(owners, fmt::format("activation producer: 2 warp(s), the most that take turns on a ring of {} "
                                    "stages with step owners",
                                    stages)));
  }
  shallow.stages = 6;
  CHECK(plan_launch(glm(1), 1, h200, shallow).activation_warps == 3);
  CHECK(plan_launch(glm(1), 1, h200, {}).activation_warps == 3);  // 8 stages
  shallow.stages = 5;
  shallow.activation_warps = 3;
  CHECK_THROWS_WITH_AS(plan_launch(glm(1), 1, h200, shallow),
                       "activation_warps = 3 is invalid on a ring of 5 stages with step owners: warps taking turns "
                       "there need at least 6 stages, or a multiple of 3 (allowed: 1-2)",
                       ConfigError);
  // Set by the options past what the schedulers leave: said with the register cap it costs.
  MoeCodegenOptions four;
  four.activation_warps = 4;
  const MoeLaunchPlan costly = plan_launch(glm(1), 8, h200, four);
  CHECK(costly.compute.register_cap == 96);
  CHECK(noted(costly, "activation producer: 4 warp(s) (set by the options): .maxnreg 96, against 128 with one"));
  o.activation_warps = 5;
  CHECK_THROWS_WITH_AS(validate(o), "activation_warps = 5 is outside the allowed range [1, 4] (0: as planned)",
                       ConfigError);
  o.activation_warps = 4;
  o.ctas_per_sm = 4;
  o.consumer_groups = 3;
  CHECK_THROWS_WITH_AS(plan_launch(glm(1), 8, h200, o),
                       "activation_warps = 4 is invalid at 4 compute CTA(s) per SM: 4 CTA(s) of 544 threads exceed "
                       "the SM's 2048 (allowed: 1-3)",
                       ConfigError);
}

TEST_CASE("padding: H and I run at the kernels' step widths, zero-padded") {
  MoeConfig c = glm(1);
  CHECK(padded_hidden(c) == 6144);  // multiples of 128 run as they are
  CHECK(padded_intermediate(c) == 2048);
  c.hidden = 2880;  // gpt-oss: to 256
  c.intermediate = 2880;
  CHECK(padded_hidden(c) == 3072);
  CHECK(padded_intermediate(c) == 2944);
  const MoeLaunchPlan p = plan_launch(c, 8, builtin_profile("h200"), {});
  CHECK(p.tiles == 6);  // W1's 92 row tiles: 15 items of 6, then one of 2; W2's 48: 8 items
  CHECK(std::any_of(p.notes.begin(), p.notes.end(), [](const std::string& n) {
    return n.find("a token tile's last item has 2 (GEMM1, 5888 rows) and 6 (GEMM2, 3072 rows)") != std::string::npos;
  }));
  CHECK(std::any_of(p.notes.begin(), p.notes.end(), [](const std::string& n) {
    return n.find("H = 2880, I = 2880 run as 3072 and 2944") != std::string::npos;
  }));
}

TEST_CASE("a caller's stages or ctas_per_sm that do not fit are refused naming the option and what fits") {
  // They came back as a PlanError, which the public API reports with no field (as if not bad input).
  const MoeConfig glm = builtin_model("glm5.2");
  const DeviceProfile h200 = builtin_profile("h200");
  auto refusal = [&](const MoeCodegenOptions& options) -> std::pair<std::string, std::string> {
    try {
      plan_launch(glm, 256, h200, options);
    } catch (const ConfigError& e) {
      return {e.field(), e.what()};
    }
    return {"(planned)", ""};
  };
  MoeCodegenOptions deep;
  deep.stages = 12;  // B = 256's 16-column tiles fit 7
  const auto [stages_field, stages_why] = refusal(deep);
  CHECK(stages_field == "stages");
  CHECK(stages_why.find("stages = 12 is invalid for glm5.2 B=256 on h200") == 0);
  CHECK(stages_why.find("(allowed: 2-7)") != std::string::npos);
  MoeCodegenOptions crowded;
  crowded.ctas_per_sm = 8;
  const auto [ctas_field, ctas_why] = refusal(crowded);
  CHECK(ctas_field == "ctas_per_sm");
  CHECK(ctas_why.find("ctas_per_sm = 8 is invalid") == 0);
}
