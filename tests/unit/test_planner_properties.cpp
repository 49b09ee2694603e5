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

// Under AddressSanitizer a plan costs ~100x more, so each combination there
// takes every 4th batch size, from a rotating offset: every B in 1..256 is
// still planned on every profile, by a quarter of the combinations.
#if defined(__SANITIZE_ADDRESS__)
constexpr int k_batch_stride = 4;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr int k_batch_stride = 4;
#else
constexpr int k_batch_stride = 1;
#endif
#else
constexpr int k_batch_stride = 1;
#endif

std::vector<DeviceProfile> profiles() {
  // The two built-ins, and a small sm_120a part whose 40 KiB cannot hold the
  // tile_n = 16 model, so that the sweep also meets rejections.
  LiveDeviceNumbers small{"small-sm120", Target{Arch::sm_120a}, 48, 40 * 1024, 40 * 1024, 65536, 1024, 1536, 0};
  return {builtin_profile("rtx-pro-5000"), builtin_profile("h200"), from_live_device(small)};
}

// Doctest assertions are costly under ASan, so the invariants of one plan are
// gathered here and reported by a single CHECK, naming each one that broke.
struct Violations {
  std::string role;  // the launch being checked, if any
  std::string list;
  void add(const char* what, int line) {
    list += "\n  line " + std::to_string(line) + (role.empty() ? "" : " [" + role + "]") + ": " + what;
  }
};
#define EXPECT(...)                                    \
  do {                                                 \
    if (!(__VA_ARGS__)) v.add(#__VA_ARGS__, __LINE__); \
  } while (0)

void check_launch(Violations& v, const char* role, const RoleLaunch& r, const DeviceProfile& d) {
  v.role = role;
  EXPECT(r.grid >= 0);
  EXPECT(r.grid <= r.blocks_per_sm * r.sms);  // eq. (6)
  EXPECT(r.threads <= d.max_threads_per_block);
  EXPECT(r.blocks_per_sm * r.threads <= d.max_threads_per_sm);
  EXPECT(r.smem_bytes <= d.smem_per_block);
  EXPECT(r.blocks_per_sm * r.smem_bytes <= d.smem_per_sm);
}

// Every invariant a plan states about itself, re-derived from the inputs.
void check_invariants(Violations& v, const MoeConfig& c, int B, const DeviceProfile& d, const Geometry& g) {
  const ArchRules& rules = *find_arch_rules(d.target);
  const int L = c.experts / c.ranks, k = c.top_k, R = c.ranks;
  const bool sm90 = d.target.arch == Arch::sm_90a;
  // Token tile.
  EXPECT(g.rows_per_expert == (B * k + L - 1) / L);
  const int r = g.rows_per_expert;
  EXPECT(g.tile_n == token_tile(r));
  EXPECT((g.tile_n >= r || (r >= 96 && g.tile_n == 64)));  // the documented fallback
  EXPECT(g.tiles_per_expert * g.tile_n >= r);
  EXPECT((g.tiles_per_expert - 1) * g.tile_n < r);
  // Mainloop.
  const bool compact_tier = g.tile_n == 48 || g.tile_n == 80 || g.tile_n == 96;
  EXPECT(g.compact_weights == (sm90 || compact_tier));
  EXPECT(g.handoff_slots == (g.handoff == HandoffKind::smem ? 1 : 2));
  EXPECT((g.handoff == HandoffKind::smem) == (g.tile_n < 32));
  EXPECT((g.handoff == HandoffKind::shared_chunks) == (g.tile_n >= 48));
  // Return staging and dispatch.
  EXPECT(g.mirrored_metadata == (k < R));
  EXPECT(g.batched_returns == (c.batched_routes && B * k >= 32 * L));
  if (g.relay_staging) {
    EXPECT(g.batched_returns);
    EXPECT(g.relay_arena_bytes <= (std::int64_t{256} << 20));
    EXPECT(!(g.mirrored_metadata && !c.shared_expert));
  }
  if (g.pull_cache) EXPECT(k >= R);
  EXPECT(g.direct_scan == (B <= 2));
  const int depth = g.pull_batch_depth;
  EXPECT((depth == 1 || depth == 2 || depth == 4 || depth == 8));
  // SMEM model and stages.
  const SmemInputs in{g.tile_n,  g.stages,        g.compact_weights,     rules.activation_bytes,
                      g.handoff, g.handoff_slots, g.smem.shared_tile_ns, g.relay_staging};
  EXPECT(role2_smem_model(in) == g.smem);
  EXPECT(g.smem.role2_bytes <= d.smem_per_block);
  EXPECT(g.stages >= min_stages(g.tile_n));
  if (!sm90) {
    EXPECT(g.stages == (g.tile_n == 16 ? 4 : 2));
  } else {
    EXPECT(g.stages <= 8);
    // The deepest depth within two CTAs' share of the SM; only when even the
    // shallowest exceeds it, the deepest within the block limit.
    SmemInputs next = in, shallowest = in;
    next.stages = g.stages + 1;
    shallowest.stages = min_stages(g.tile_n);
    const int two_ctas = std::min(d.smem_per_block, d.smem_per_sm / 2);
    const bool fits_two = role2_smem_model(shallowest).role2_bytes <= two_ctas;
    const int budget = fits_two ? two_ctas : d.smem_per_block;
    EXPECT(g.smem.role2_bytes <= budget);
    EXPECT((g.stages == 8 || role2_smem_model(next).role2_bytes > budget));
    if (!fits_two) EXPECT(g.co_residency == 1);
    EXPECT(g.loads_in_flight_per_sm >= 32 * 1024);
  }
  // eq. (4).
  EXPECT(g.co_residency == co_residency(d.smem_per_sm, g.smem.role2_bytes));
  EXPECT((g.co_residency == 1 || g.co_residency * g.smem.role2_bytes <= d.smem_per_sm));
  if (g.co_residency == 1) {
    EXPECT(g.register_cap == 0);
  } else {
    EXPECT(g.register_cap % 16 == 0);
    EXPECT(g.register_cap * 192 * g.co_residency <= d.regs_per_sm);
    EXPECT((g.register_cap + 16) * 192 * g.co_residency > d.regs_per_sm);
  }
  // Partition (eq. 5) and grids.
  const Partition& p = g.partition;
  EXPECT(p.compute + p.dispatch == d.sm_count);
  EXPECT(p.compute >= 32);
  EXPECT(p.compute % 2 == 0);
  EXPECT(p.compute % d.gc_granularity == 0);
  EXPECT(p.dispatch >= c.dispatch_sms);
  EXPECT(g.compute.sms == p.compute);
  EXPECT(g.finalize.sms == p.compute);
  EXPECT(g.dispatch.sms == p.dispatch);
  EXPECT(g.compute.blocks_per_sm == g.co_residency);
  EXPECT(g.compute.smem_bytes == g.smem.role2_bytes);
  EXPECT(g.l2_dedicated + 1 <= g.compute.grid);
  EXPECT(g.relay.grid == (g.relay_staging ? std::min(R, g.compute.grid - g.l2_dedicated) : 0));
  EXPECT(g.relay.grid <= g.compute.grid - g.l2_dedicated);
  check_launch(v, "dispatch", g.dispatch, d);
  check_launch(v, "compute", g.compute, d);
  check_launch(v, "relay", g.relay, d);
  check_launch(v, "finalize", g.finalize, d);
  EXPECT(!g.notes.empty());
  v.role = "";
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
          if (combo / 3 % 3 == 1) c.shared_expert = SharedExpert{32};
          if (combo / 3 % 3 == 2) c.shared_expert = SharedExpert{128};
          c.batched_routes = combo % 7 != 0;
          for (int B = 1 + combo % k_batch_stride; B <= c.token_capacity; B += k_batch_stride) {
            CAPTURE(d.name);
            CAPTURE(nlohmann::json(c).dump());
            CAPTURE(B);
            try {
              const Geometry g = plan(c, B, d);
              ++planned;
              Violations v;
              check_invariants(v, c, B, d, g);
              CHECK_MESSAGE(v.list.empty(), "broken invariants:", v.list);
              if (B % 37 == 1) CHECK(nlohmann::json(plan(c, B, d)).dump() == nlohmann::json(g).dump());
            } catch (const PlanError& e) {
              ++rejected;
              // The reason names the shape and says why, after the shape.
              const std::string why = e.what(), shape = "B=" + std::to_string(B) + " on " + d.name;
              const size_t at = why.find(shape);
              CHECK_MESSAGE((at != std::string::npos && why.size() > at + shape.size() + 20), why);
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
