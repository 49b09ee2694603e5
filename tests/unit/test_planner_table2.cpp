// The seed paper's Table 2 (R = 8, RTX PRO 5000) and eq. (4), reproduced by
// the planner from the equations of §4.4.
#include <doctest/doctest.h>

#include "codegen/occupancy.hpp"
#include "codegen/planner.hpp"

using namespace moejit::codegen;

namespace {
Geometry plan_rtx(const char* model, bool shared, int batch, int ranks = 8) {
  MoeConfig c = builtin_model(model, shared);
  c.ranks = ranks;
  return plan(c, batch, builtin_profile("rtx-pro-5000"));
}

struct Table2Column {
  const char* model;
  bool shared;
  // B = 1: rows/expert, tile, stages
  int r1, tile1, stages1;
  // B = 256
  int r, tile_n, stages;
  bool compact, chunks, batched, mirrored, relay, pull_cache;
  int ell;
};

// One row per column of Table 2; the fused variant of GLM5.2 has no slash in
// the table, so it equals the routed one.
constexpr Table2Column k_table2[] = {
    {"glm5.2", false, 1, 16, 4, 64, 80, 2, true, true, true, false, true, true, 4},
    {"glm5.2", true, 1, 16, 4, 64, 80, 2, true, true, true, false, true, true, 4},
    {"dsv4.1-flash", false, 1, 16, 4, 32, 48, 2, true, true, true, true, false, false, 3},
    {"dsv4.1-flash", true, 1, 16, 4, 32, 48, 2, true, true, true, true, true, false, 4},
};
}  // namespace

TEST_CASE("planner reproduces Table 2 (R = 8, rtx-pro-5000)") {
  for (const Table2Column& t : k_table2) {
    CAPTURE(t.model);
    CAPTURE(t.shared);
    const Geometry small = plan_rtx(t.model, t.shared, 1);
    CHECK(small.rows_per_expert == t.r1);
    CHECK(small.tile_n == t.tile1);
    CHECK(small.stages == t.stages1);

    const Geometry g = plan_rtx(t.model, t.shared, 256);
    CHECK(g.rows_per_expert == t.r);
    CHECK(g.tile_n == t.tile_n);
    CHECK(g.stages == t.stages);
    CHECK(g.compact_weights == t.compact);
    CHECK((g.handoff == HandoffKind::shared_chunks) == t.chunks);
    CHECK(g.handoff_slots == 2);
    CHECK(g.batched_returns == t.batched);
    CHECK(g.mirrored_metadata == t.mirrored);
    CHECK(g.relay_staging == t.relay);
    CHECK(g.pull_cache == t.pull_cache);
    CHECK(g.l2_dedicated == t.ell);
  }
}

TEST_CASE("Table 2's B = 256 SMEM model, term by term (eq. 9-12)") {
  // GLM5.2: tile_n 80, compact, 2 stages, shared chunks with s = 2, relay on.
  const SmemModel m = plan_rtx("glm5.2", false, 256).smem;
  CHECK(m.stage_weight_bytes == 64 * 128 / 2 + 512);              // 4608
  CHECK(m.stage_activation_bytes == 80 * 128 + 512);              // 10752
  CHECK(m.pipeline_bytes == 2 * (4608 + 10752));                  // 30720
  CHECK(m.token_bytes == 80 * 16 + 16);                           // 1296
  CHECK(m.barrier_bytes == 4 * 8 * 2);                            // 64
  CHECK(m.return_bytes == 20 * 80 + 128 * 32 * 2);                // 9792
  CHECK(m.util_bytes == 32 + 24 * 2 + 16 * 2 * 80);               // 2640
  CHECK(m.model_bytes == 30720 + 1296 + 64 + 9792 + 2640 + 512);  // 45024
  CHECK(m.relay_term == 2 * (16384 + 8));
  CHECK(m.shared_term == 0);
  CHECK(m.role2_bytes == 45024);
  // Without compact weights the model would be 53216 B: one CTA per SM. The
  // 4 KiB per stage is what buys the second CTA (§4.3).
  CHECK(102400 / (m.model_bytes + 2 * 4096) == 1);

  // DSV4.1-Flash fused: the shared-expert double buffer (tile_ns 64) is the
  // largest of the three terms.
  const SmemModel f = plan_rtx("dsv4.1-flash", true, 256).smem;
  CHECK(f.model_bytes == 2 * (4608 + 48 * 128 + 512) + 48 * 16 + 16 + 64 + (20 * 48 + 8192) + (80 + 32 * 48) + 512);
  CHECK(f.shared_tile_ns == 64);
  CHECK(f.shared_bytes == 17408);  // ceil((8192 + 512 + 132 * 64) / 1024) * 1024
  CHECK(f.shared_term == 2 * 17408 + 16);
  CHECK(f.role2_bytes == f.shared_term);
}

TEST_CASE("eq. 4: co-residency and register cap") {
  CHECK(register_cap(2, 65536, 192) == 160);
  CHECK(register_cap(4, 65536, 192) == 80);
  CHECK(register_cap(3, 65536, 192) == 112);
  CHECK(register_cap(1, 65536, 192) == 0);  // no cap
  CHECK(co_residency(102400, 45024) == 2);
  CHECK(co_residency(102400, 25600) == 4);
  CHECK(co_residency(102400, 20000) == 4);  // min(4, 5)
  CHECK(co_residency(102400, 60000) == 1);
  CHECK(co_residency(102400, 200000) == 1);  // max(1, 0); the block limit rejects it

  // In plans: Table 2's GLM5.2 B = 256 runs two CTAs at 160 registers.
  const Geometry g = plan_rtx("glm5.2", false, 256);
  CHECK(g.co_residency == 2);
  CHECK(g.register_cap == 160);

  // A larger SM turns the tile_n = 32 model (29488 B) into four CTAs at 80.
  LiveDeviceNumbers big{"sm120-128k", Target{Arch::sm_120a}, 110, 128 * 1024, 127 * 1024, 65536, 1024, 1536, 0};
  MoeConfig c = builtin_model("glm5.2");
  c.ranks = 8;
  const Geometry four = plan(c, 64, from_live_device(big));
  CHECK(four.tile_n == 32);
  CHECK(four.co_residency == 4);
  CHECK(four.register_cap == 80);

  // A small SM holds one tile_n = 16 CTA (48648 B): no cap.
  LiveDeviceNumbers small{"sm120-64k", Target{Arch::sm_120a}, 110, 64 * 1024, 63 * 1024, 65536, 1024, 1536, 0};
  const Geometry one = plan(c, 1, from_live_device(small));
  CHECK(one.co_residency == 1);
  CHECK(one.register_cap == 0);
}
