// The individual rules of the decision chain (§4.2, §4.4, §4.5), the sm_90a
// rule set, and the JSON round trips.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "codegen/arch_rules.hpp"
#include "codegen/planner.hpp"

using namespace moejit::codegen;

namespace {
MoeConfig model(const char* name, int ranks, bool shared = false) {
  MoeConfig c = builtin_model(name, shared);
  c.ranks = ranks;
  return c;
}
const DeviceProfile& rtx() {
  static const DeviceProfile p = builtin_profile("rtx-pro-5000");
  return p;
}
const DeviceProfile& h200() {
  static const DeviceProfile p = builtin_profile("h200");
  return p;
}
}  // namespace

TEST_CASE("eq. 1 and the eq. 8 tiers with their fallbacks") {
  CHECK(rows_per_expert(1, 8, 32) == 1);
  CHECK(rows_per_expert(256, 8, 32) == 64);
  CHECK(rows_per_expert(256, 6, 48) == 32);
  CHECK(rows_per_expert(5, 6, 48) == 1);  // ceil(30 / 48)
  const std::pair<int, int> cases[] = {
      {1, 16},  {15, 16}, {16, 32}, {31, 32}, {32, 48}, {47, 48},  {48, 64},  {63, 64},
      {64, 80}, {72, 80}, {73, 96}, {95, 96}, {96, 64}, {128, 64}, {300, 64},
  };
  for (auto [r, tile] : cases) {
    CAPTURE(r);
    CHECK(token_tile(r) == tile);
  }
}

TEST_CASE("l: 1 by default, 4 with tile_n >= 64 or a global handoff, 6 unbatched at 80, 3 batched direct") {
  CHECK(l2_dedicated(16, HandoffKind::smem, false, false, false) == 1);
  CHECK(l2_dedicated(32, HandoffKind::global, false, false, false) == 4);
  CHECK(l2_dedicated(64, HandoffKind::shared_chunks, true, true, false) == 4);
  CHECK(l2_dedicated(80, HandoffKind::shared_chunks, false, false, false) == 6);
  CHECK(l2_dedicated(48, HandoffKind::shared_chunks, true, false, false) == 3);
  CHECK(l2_dedicated(48, HandoffKind::shared_chunks, true, false, true) == 4);

  // Without the batched route arrays GLM5.2's B = 256 runs the unbatched 80 tier.
  MoeConfig c = model("glm5.2", 8);
  c.batched_routes = false;
  const Geometry g = plan(c, 256, rtx());
  CHECK(g.tile_n == 80);
  CHECK(!g.batched_returns);
  CHECK(!g.relay_staging);
  CHECK(g.l2_dedicated == 6);
  CHECK(g.pull_cache);             // tile 80 keeps the handoff arena free
  CHECK(g.pull_batch_depth == 8);  // L < 48: 8, not lowered without batched returns
  CHECK(g.finalize.threads == 384);
}

TEST_CASE("relay staging: the 256 MiB arena budget, mirrored metadata, the shared expert") {
  // R = 16, k = 8 < R: mirrored. Routed: the direct path suffices.
  MoeConfig c = model("glm5.2", 16);
  c.token_capacity = 128;
  Geometry g = plan(c, 128, rtx());
  CHECK(g.batched_returns);
  CHECK(g.mirrored_metadata);
  CHECK(!g.relay_staging);
  CHECK(g.l2_dedicated == 3);
  // Fused: 16 x 128 x 8 x 2 x 6144 = 192 MiB fits, so the copiers come back.
  c.shared_expert = SharedExpert{128};
  g = plan(c, 128, rtx());
  CHECK(g.relay_staging);
  CHECK(g.relay_arena_bytes == std::int64_t{16} * 128 * 8 * 2 * 6144);
  CHECK(g.relay.grid == 16);
  CHECK(g.l2_dedicated == 4);
  // Bcap 256 doubles the arena to 384 MiB: over budget.
  c.token_capacity = 256;
  g = plan(c, 128, rtx());
  CHECK(!g.relay_staging);
  CHECK(g.relay_arena_bytes == 0);
}

TEST_CASE("pull cache and pull batch depth") {
  // k = R = 8, tile 48 batched (B = 128): on, 8 R Bcap bytes.
  Geometry g = plan(model("glm5.2", 8), 128, rtx());
  CHECK(g.tile_n == 48);
  CHECK(g.pull_cache);
  CHECK(g.pull_cache_bytes == 8 * 8 * 256);
  CHECK(g.pull_batch_depth == 2);
  // tile 64 (r = 50): the handoff arena holds return staging, no cache.
  g = plan(model("glm5.2", 8), 200, rtx());
  CHECK(g.tile_n == 64);
  CHECK(!g.pull_cache);
  CHECK(g.pull_cache_bytes == 0);
  // k < R never caches; L = 48 pulls one row at a time.
  g = plan(model("dsv4.1-flash", 8), 256, rtx());
  CHECK(!g.pull_cache);
  CHECK(g.pull_batch_depth == 1);
  // L = 12 (< 48) with mirrored metadata keeps 8 rows in flight.
  g = plan(model("dsv4.1-flash", 32), 256, rtx());
  CHECK(g.pull_batch_depth == 8);
}

TEST_CASE("direct scan, dispatch and finalize grids") {
  Geometry g = plan(model("glm5.2", 8), 1, rtx());
  CHECK(g.direct_scan);
  CHECK(g.compute.grid == 1 + 32);  // l + L: the expert CTAs are clamped to the local experts
  CHECK(g.finalize.grid == 3);      // ceil(1 x 6144 / 2048)
  CHECK(g.finalize.threads == 384);
  CHECK(g.bulk_pull_engine);
  CHECK(g.role1_smem == 512 + 16 * 6144 + 64);
  CHECK(g.dispatch.grid == 6);  // 6 x min(4, floor(102400 / 98880))
  CHECK(g.dispatch.threads == 256);
  g = plan(model("glm5.2", 8), 4, rtx());
  CHECK(!g.direct_scan);
  CHECK(g.compute.grid == 2 * 104);
  // H = 8192: the engine's 131648 B exceed the 99 KiB block limit.
  MoeConfig wide = model("glm5.2", 8);
  wide.hidden = 8192;
  g = plan(wide, 256, rtx());
  CHECK(!g.bulk_pull_engine);
  CHECK(g.dispatch.grid == 6 * 4);
  CHECK(g.finalize.grid == 256);  // min(Bcap, 4 x 104)
  CHECK(g.finalize.threads == 256);
}

TEST_CASE("eq. 5 partition and eq. 6 residency") {
  const Partition rtx_split = split_partition(110, 6, 2);
  CHECK(rtx_split.compute == 104);
  CHECK(rtx_split.dispatch == 6);
  CHECK(partition_problem(rtx_split, true).empty());
  const Partition h_split = split_partition(132, 6, 8);
  CHECK(h_split.compute == 120);
  CHECK(h_split.dispatch == 12);
  CHECK(partition_problem(h_split, true).empty());
  CHECK(partition_problem(split_partition(45, 6, 1), true).find("odd") != std::string::npos);
  CHECK(partition_problem(split_partition(45, 6, 1), false).empty());

  const Residency ok = check_residency("role 2 (compute)", 208, 2, 104);
  CHECK(ok.ok);
  CHECK(ok.capacity == 208);
  CHECK(ok.message.empty());
  const Residency bad = check_residency("role 2 (compute)", 209, 2, 104);
  CHECK(!bad.ok);
  CHECK(bad.message == "role 2 (compute): grid 209 exceeds its resident capacity 208 = 2 blocks/SM x 104 SMs (eq. 6)");
  CHECK(!check_residency("role 3 (finalize)", 0, 2, 104).ok);
}

TEST_CASE("sm_90a: compact always, BF16 activations, the deepest stages that keep two CTAs") {
  const ArchRules& rules = *find_arch_rules(Target{Arch::sm_90a});
  const Geometry g = plan(model("glm5.2", 8), 256, h200());
  CHECK(g.target == "sm_90a");
  CHECK(g.tile_n == 80);
  CHECK(g.compact_weights);
  CHECK(g.smem.stage_weight_bytes == 4608);
  CHECK(g.smem.stage_activation_bytes == 80 * 128 * 2 + 512);
  CHECK(g.stages == 3);
  CHECK(g.smem.role2_bytes <= 228 * 1024 / 2);
  SmemInputs deeper{80, 4, true, 2, HandoffKind::shared_chunks, 2, 0, true};
  CHECK(role2_smem_model(deeper).role2_bytes > 228 * 1024 / 2);  // a fourth stage would cost the second CTA
  CHECK(g.co_residency == 2);
  CHECK(g.register_cap == 160);
  CHECK(g.partition.compute == 120);
  CHECK(g.partition.dispatch == 12);
  CHECK(g.loads_in_flight_per_sm >= 32 * 1024);
  CHECK(rules.max_stages == 8);

  // tile_n 16 (B = 1): the 8-stage maximum, small enough for three CTAs.
  const Geometry s = plan(model("glm5.2", 8), 1, h200());
  CHECK(s.compact_weights);
  CHECK(s.stages == 8);
  CHECK(s.co_residency == 3);
  CHECK(s.register_cap == 112);

  // sm_120a keeps the paper's depths even where SMEM would allow more.
  CHECK(plan(model("glm5.2", 8), 1, rtx()).stages == 4);
  CHECK(!plan(model("glm5.2", 8), 64, rtx()).compact_weights);  // tile 32
}

TEST_CASE("targets without a rule set are rejected, not approximated") {
  LiveDeviceNumbers b200{"b200", Target{Arch::sm_100a}, 148, 233472, 232448, 65536, 1024, 2048, 0};
  CHECK_THROWS_WITH_AS(plan(model("glm5.2", 8), 1, from_live_device(b200)),
                       "b200: the planner has no rule set for sm_100a (it plans sm_90a and sm_120a)", PlanError);
  // A block limit below the smallest model rejects the shape with the figures.
  LiveDeviceNumbers tiny{"tiny", Target{Arch::sm_120a}, 110, 40 * 1024, 40 * 1024, 65536, 1024, 1536, 0};
  CHECK_THROWS_WITH_AS(plan(model("glm5.2", 8), 1, from_live_device(tiny)),
                       doctest::Contains("S_role2 = 48648 B at 4 stages exceeds the 40960 B a block may use"),
                       PlanError);
  CHECK_NOTHROW(plan(model("glm5.2", 8), 128, from_live_device(tiny)));  // tile 48: 34656 B
}

TEST_CASE("JSON round trips: config, profile, geometry") {
  MoeConfig c = model("dsv4.1-flash", 8, true);
  c.swiglu_clamp = 7.5f;
  CHECK(nlohmann::json(c).get<MoeConfig>() == c);
  c.swiglu_clamp.reset();
  c.shared_expert.reset();
  c.batched_routes = false;
  CHECK(nlohmann::json(c).get<MoeConfig>() == c);
  for (const DeviceProfile& d : {rtx(), h200()}) CHECK(nlohmann::json(d).get<DeviceProfile>() == d);
  for (int b : {1, 64, 256}) {
    const Geometry g = plan(model("glm5.2", 8, true), b, h200());
    const nlohmann::json j = g;
    CHECK(j.get<Geometry>() == g);
    CHECK(j.at("handoff").get<std::string>() == std::string(handoff_name(g.handoff)));
  }
}
