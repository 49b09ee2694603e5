// Property test over the valid shape space: every plan is either rejected with
// a reason or satisfies its own invariants, and planning is deterministic.
#include <doctest/doctest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "codegen/arch_rules.hpp"
#include "codegen/planner.hpp"

using namespace moejit::codegen;

namespace {
constexpr int k_ranks[] = {1, 2, 4, 8, 16, 32};
constexpr int k_experts[] = {32, 64, 96, 256, 384, 1024};
constexpr int k_top_k[] = {1, 2, 6, 8, 32};
constexpr int k_hidden[] = {512, 5120, 6144, 8192};
constexpr int k_intermediate[] = {256, 2304, 4096};

std::vector<DeviceProfile> profiles() {
  // The two built-ins, and a small sm_120a part whose 40 KiB cannot hold the
  // tile_n = 16 model, so that the sweep also meets rejections.
  LiveDeviceNumbers small{"small-sm120", Target{Arch::sm_120a}, 48, 40 * 1024, 40 * 1024, 65536, 1024, 1536, 0};
  return {builtin_profile("rtx-pro-5000"), builtin_profile("h200"), from_live_device(small)};
}

void check_launch(const char* role, const RoleLaunch& r, const DeviceProfile& d) {
  CAPTURE(role);
  CHECK(r.grid >= 0);
  CHECK(r.grid <= r.blocks_per_sm * r.sms);  // eq. (6)
  CHECK(r.threads <= d.max_threads_per_block);
  CHECK(r.blocks_per_sm * r.threads <= d.max_threads_per_sm);
  CHECK(r.smem_bytes <= d.smem_per_block);
  CHECK(r.blocks_per_sm * r.smem_bytes <= d.smem_per_sm);
}

// Every invariant a plan states about itself, re-derived from the inputs.
void check_invariants(const MoeConfig& c, int B, const DeviceProfile& d, const Geometry& g) {
  const ArchRules& rules = *find_arch_rules(d.target);
  const int L = c.experts / c.ranks, k = c.top_k, R = c.ranks;
  const bool sm90 = d.target.arch == Arch::sm_90a;
  // Token tile.
  CHECK(g.rows_per_expert == (B * k + L - 1) / L);
  const int r = g.rows_per_expert;
  CHECK(g.tile_n == token_tile(r));
  CHECK((g.tile_n >= r || (r >= 96 && g.tile_n == 64)));  // the documented fallback
  CHECK(g.tiles_per_expert * g.tile_n >= r);
  CHECK((g.tiles_per_expert - 1) * g.tile_n < r);
  // Mainloop.
  const bool compact_tier = g.tile_n == 48 || g.tile_n == 80 || g.tile_n == 96;
  CHECK(g.compact_weights == (sm90 || compact_tier));
  CHECK(g.handoff_slots == (g.handoff == HandoffKind::smem ? 1 : 2));
  CHECK((g.handoff == HandoffKind::smem) == (g.tile_n < 32));
  CHECK((g.handoff == HandoffKind::shared_chunks) == (g.tile_n >= 48));
  // Return staging and dispatch.
  CHECK(g.mirrored_metadata == (k < R));
  CHECK(g.batched_returns == (c.batched_routes && B * k >= 32 * L));
  if (g.relay_staging) {
    CHECK(g.batched_returns);
    CHECK(g.relay_arena_bytes <= (std::int64_t{256} << 20));
    CHECK(!(g.mirrored_metadata && !c.shared_expert));
  }
  if (g.pull_cache) CHECK(k >= R);
  CHECK(g.direct_scan == (B <= 2));
  const int depth = g.pull_batch_depth;
  CHECK((depth == 1 || depth == 2 || depth == 4 || depth == 8));
  // SMEM model and stages.
  const SmemInputs in{g.tile_n,  g.stages,        g.compact_weights,     rules.activation_bytes,
                      g.handoff, g.handoff_slots, g.smem.shared_tile_ns, g.relay_staging};
  CHECK(role2_smem_model(in) == g.smem);
  CHECK(g.smem.role2_bytes <= d.smem_per_block);
  CHECK(g.stages >= min_stages(g.tile_n));
  if (!sm90) {
    CHECK(g.stages == (g.tile_n == 16 ? 4 : 2));
  } else {
    CHECK(g.stages <= 8);
    const int budget = std::min(d.smem_per_block, d.smem_per_sm / 2);
    SmemInputs next = in;
    next.stages = g.stages + 1;
    if (g.smem.role2_bytes <= budget) {
      CHECK((g.stages == 8 || role2_smem_model(next).role2_bytes > budget));  // the deepest that fits
    } else {
      CHECK(g.co_residency == 1);
    }
    CHECK(g.loads_in_flight_per_sm >= 32 * 1024);
  }
  // eq. (4).
  CHECK(g.co_residency == co_residency(d.smem_per_sm, g.smem.role2_bytes));
  CHECK((g.co_residency == 1 || g.co_residency * g.smem.role2_bytes <= d.smem_per_sm));
  if (g.co_residency == 1) {
    CHECK(g.register_cap == 0);
  } else {
    CHECK(g.register_cap % 16 == 0);
    CHECK(g.register_cap * 192 * g.co_residency <= d.regs_per_sm);
    CHECK((g.register_cap + 16) * 192 * g.co_residency > d.regs_per_sm);
  }
  // Partition (eq. 5) and grids.
  const Partition& p = g.partition;
  CHECK(p.compute + p.dispatch == d.sm_count);
  CHECK(p.compute >= 32);
  CHECK(p.compute % 2 == 0);
  CHECK(p.compute % d.gc_granularity == 0);
  CHECK(p.dispatch >= c.dispatch_sms);
  CHECK(g.compute.sms == p.compute);
  CHECK(g.finalize.sms == p.compute);
  CHECK(g.dispatch.sms == p.dispatch);
  CHECK(g.compute.blocks_per_sm == g.co_residency);
  CHECK(g.compute.smem_bytes == g.smem.role2_bytes);
  CHECK(g.l2_dedicated + 1 <= g.compute.grid);
  CHECK(g.relay.grid == (g.relay_staging ? std::min(R, g.compute.grid - g.l2_dedicated) : 0));
  CHECK(g.relay.grid <= g.compute.grid - g.l2_dedicated);
  check_launch("dispatch", g.dispatch, d);
  check_launch("compute", g.compute, d);
  check_launch("relay", g.relay, d);
  check_launch("finalize", g.finalize, d);
  CHECK(!g.notes.empty());
}
}  // namespace

TEST_CASE("property: every shape on every profile is planned within its invariants or rejected with a reason") {
  int planned = 0, rejected = 0, combo = 0;
  for (const DeviceProfile& d : profiles()) {
    for (int R : k_ranks) {
      for (int E : k_experts) {
        if (E % R != 0) continue;
        for (int k : k_top_k) {
          if (k > E) continue;
          // H, I, the shared expert and the route arrays rotate across the
          // combinations so each value meets every (R, E, k) family.
          ++combo;
          MoeConfig c;
          c.name = "sweep";
          c.ranks = R;
          c.experts = E;
          c.top_k = k;
          c.hidden = k_hidden[combo % 4];
          c.intermediate = k_intermediate[combo % 3];
          if (combo % 3 == 1) c.shared_expert = SharedExpert{32};
          if (combo % 3 == 2) c.shared_expert = SharedExpert{128};
          c.batched_routes = combo % 7 != 0;
          for (int B = 1; B <= c.token_capacity; ++B) {
            CAPTURE(d.name);
            CAPTURE(nlohmann::json(c).dump());
            CAPTURE(B);
            try {
              const Geometry g = plan(c, B, d);
              ++planned;
              check_invariants(c, B, d, g);
              if (B % 37 == 1) CHECK(nlohmann::json(plan(c, B, d)).dump() == nlohmann::json(g).dump());
            } catch (const PlanError& e) {
              ++rejected;
              const std::string why = e.what();
              CHECK(why.find(d.name) != std::string::npos);
              CHECK(why.find("B=" + std::to_string(B)) != std::string::npos);
              CHECK(why.size() > 40);
            }
          }
        }
      }
    }
  }
  MESSAGE(planned << " plans, " << rejected << " rejections");
  CHECK(planned > 0);
  CHECK(rejected > 0);
}
