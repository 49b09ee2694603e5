// The runtime's CPU-side parts of graph launch: argument packing, the
// child-graph key, residency messages, the workspace layout (and its split-K slots) and the options.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "codegen/moe_kernels.hpp"
#include "runtime/kernel_args.hpp"
#include "runtime/moe_layer.hpp"
#include "runtime/residency.hpp"
#include "runtime/role_graph.hpp"
#include "templates/moe_contract.cuh"

using namespace moejit;

TEST_CASE("kernel arguments are packed at their alignment and pointed to") {
  runtime::TensorMapBlob map;
  for (std::size_t i = 0; i < map.bytes.size(); ++i) map.bytes[i] = static_cast<std::uint8_t>(i * 7 + 1);
  runtime::KernelArgs args;
  args.add(std::uint32_t{5}).add(map).add(CUdeviceptr{0x1234500}).add(2.5f);
  REQUIRE(args.size() == 4);
  void** p = args.pointers();
  CHECK(*static_cast<std::uint32_t*>(p[0]) == 5);
  CHECK(std::memcmp(p[1], map.bytes.data(), 128) == 0);
  CHECK(*static_cast<CUdeviceptr*>(p[2]) == 0x1234500);
  CHECK(*static_cast<float*>(p[3]) == 2.5f);
  // The map sits at a 64-byte offset after the u32; the pointer at +128 after it.
  CHECK(static_cast<char*>(p[1]) - static_cast<char*>(p[0]) == 64);
  CHECK(static_cast<char*>(p[2]) - static_cast<char*>(p[1]) == 128);
  CHECK(args.bytes().size() == 64 + 128 + 8 + 4);
}

namespace {
std::vector<runtime::RoleLaunch> roles(CUdeviceptr x, unsigned grid, unsigned smem, const std::string& cubin) {
  std::vector<runtime::RoleLaunch> r;
  r.push_back(runtime::RoleLaunch{std::string("dispatch"), nullptr, std::string("d"), {4, 1024, 0}, {}});
  r.push_back(runtime::RoleLaunch{std::string("compute"), nullptr, cubin, {grid, 160, smem}, {}});
  r[0].args.add(x).add(8u);
  r[1].args.add(x + 64);
  return r;
}
}  // namespace

TEST_CASE("the child-graph key covers argument bytes, cubins, launch triples and the edge kind") {
  const std::string base = runtime::role_graph_key(roles(0x1000, 396, 77448, "c"), true);
  CHECK(base.size() == 64);
  CHECK(runtime::role_graph_key(roles(0x1000, 396, 77448, "c"), true) == base);
  CHECK(runtime::role_graph_key(roles(0x2000, 396, 77448, "c"), true) != base);   // a recycled pointer
  CHECK(runtime::role_graph_key(roles(0x1000, 264, 77448, "c"), true) != base);   // grid
  CHECK(runtime::role_graph_key(roles(0x1000, 396, 60000, "c"), true) != base);   // dynamic SMEM
  CHECK(runtime::role_graph_key(roles(0x1000, 396, 77448, "c2"), true) != base);  // another cubin
  CHECK(runtime::role_graph_key(roles(0x1000, 396, 77448, "c"), false) != base);  // full edges instead of PDL
  auto threads = roles(0x1000, 396, 77448, "c");
  threads[1].dims.block = 192;
  CHECK(runtime::role_graph_key(threads, true) != base);
}

TEST_CASE("residency: an over-large persistent grid is refused naming role, grid and capacity") {
  const std::string msg = runtime::residency_problem("compute", 600, 3, 132, 160, 77448, true);
  CHECK(msg.find("role compute") != std::string::npos);
  CHECK(msg.find("grid 600") != std::string::npos);
  CHECK(msg.find("capacity 396 = 3 blocks/SM x 132 SMs") != std::string::npos);
  CHECK(msg.find("160 threads and 77448 B of dynamic SMEM") != std::string::npos);
  CHECK(runtime::residency_problem("compute", 396, 3, 132, 160, 77448, true).empty());
  // A role whose CTAs never wait on each other needs only one resident CTA per SM.
  CHECK(runtime::residency_problem("finalize", 5000, 1, 132, 256, 0, false).empty());
  const std::string none = runtime::residency_problem("dispatch", 1, 0, 132, 1024, 0, false);
  CHECK(none.find("no CTA can be resident") != std::string::npos);
  CHECK_THROWS_AS(runtime::require_residency("compute", 397, 3, 132, 160, 77448, true), runtime::ResidencyError);
}

TEST_CASE("layer options outside their ranges are refused naming the field") {
  auto refused = [](runtime::MoeLayerOptions o, const std::string& field) {
    try {
      runtime::validate_layer_options(o);
    } catch (const runtime::InvalidInput& e) {
      return std::string(e.what()).find(field) != std::string::npos;
    }
    return false;
  };
  runtime::MoeLayerOptions o;
  CHECK_NOTHROW(runtime::validate_layer_options(o));
  o.device = -1;
  CHECK(refused(o, "device = -1"));
  o = {};
  o.codegen.tile_n = 12;
  CHECK(refused(o, "tile_n = 12"));
  o = {};
  o.codegen.stages = 99;
  CHECK(refused(o, "stages = 99"));
  o = {};
  o.codegen.ctas_per_sm = 9;
  CHECK(refused(o, "ctas_per_sm = 9"));
  o = {};
  o.sm_count = -8;
  CHECK(refused(o, "sm_count = -8 is outside the allowed range [0, 4096]"));
  o.sm_count = 64;  // the device's count bounds it when the layer is built
  CHECK_NOTHROW(runtime::validate_layer_options(o));
}

TEST_CASE("a partition's SM count plans the persistent grid: 64 SMs, 64 compute CTAs") {
  const codegen::MoeConfig glm = codegen::builtin_model("glm5.2");
  codegen::DeviceProfile part = codegen::builtin_profile("h200");
  part.sm_count = 64;
  for (int b : {1, 8, 256}) {
    CAPTURE(b);
    const codegen::MoeLaunchPlan plan = codegen::plan_launch(glm, b, part, {});
    CHECK(plan.compute.grid == 64 * plan.compute.blocks_per_sm);
  }
}

TEST_CASE("the workspace layout: 256-byte aligned regions in order, the grid-sized tail last") {
  const contract::MoeDims d{256, 8, 6144, 2048, 256, contract::kPathSm90Fp8, 0};
  const contract::WorkspaceLayout l = contract::workspace_layout(d);
  const long long regions[] = {l.header,  l.ready,     l.x_q,   l.x_scales,   l.x_bf16,
                               l.handoff, l.handoff_s, l.arena, l.fixed_bytes};
  for (long long r : regions) CHECK(r % 256 == 0);
  for (size_t i = 1; i < std::size(regions); ++i) CHECK(regions[i] >= regions[i - 1]);
  CHECK(l.handoff_s - l.handoff == 256LL * 8 * 2048);                                      // E4M3 rows of the fast path
  CHECK(l.arena - l.handoff_s == 256LL * 8 * (2048 / 128) * contract::kScaleRecordBytes);  // their scale records
  CHECK(l.fixed_bytes - l.arena == 2LL * 256 * 8 * 6144);                                  // BF16 route rows
  CHECK(l.x_bf16 == l.handoff);  // no BF16 image on the fast path
  const contract::WorkspaceLayout exact =
      contract::workspace_layout({256, 8, 6144, 2048, 256, contract::kPathSm90Bf16, 0});
  CHECK(exact.handoff - exact.x_bf16 == 2LL * 256 * 6144);  // the exact path's image of x
  CHECK(exact.handoff_s - exact.handoff == 2LL * 256 * 8 * 2048);
  // The partial slots follow the flags and grow with the grid; the same bytes hold the unit schedule's partial
  // rows of up to kUnitTokens tokens (GLM5.2's at 4 tokens: 12.6 MB, within 132 CTAs' 13.0), on the fast path.
  CHECK(contract::partials_offset(d, 132) >= l.fixed_bytes + 4 * 2 * 132);
  const long long units = 4LL * contract::kUnitTokens * 8 * (2048 / 128) * 6144;
  CHECK(contract::unit_partial_bytes(d, contract::kUnitTokens) == units);
  for (int grid : {132, 264}) {
    CAPTURE(grid);
    const long long slots = 4LL * 2 * grid * contract::partial_slot_floats();
    CHECK(contract::workspace_bytes(d, grid) - contract::partials_offset(d, grid) == std::max(slots, units));
    CHECK(units <= slots);  // no bytes added for the schedule
    CHECK(contract::unit_partials_fit(d, grid, contract::kUnitTokens));
    CHECK_FALSE(contract::unit_partials_fit(d, grid, 2 * contract::kUnitTokens + 1));
  }
  const contract::MoeDims exact_dims{256, 8, 6144, 2048, 256, contract::kPathSm90Bf16, 0};
  CHECK(contract::workspace_bytes(exact_dims, 132) - contract::partials_offset(exact_dims, 132) ==
        4LL * 2 * 132 * contract::partial_slot_floats());  // no unit rows where the schedule cannot run
}

TEST_CASE("split-K slots: each consumer thread's granules are its own, inside the slot, a warp's 512 bytes apart") {
  // Every shape a compute CTA can take: groups of consumer warpgroups, a thread's kT tiles of tile_n columns.
  for (int groups = 1; groups <= contract::kMaxGroups; ++groups)
    for (int tile_n = 8; tile_n <= contract::kMaxTileN; tile_n *= 2)
      for (int kt = 1; kt * tile_n <= contract::kMaxTileN; ++kt) {
        CAPTURE(groups);
        CAPTURE(tile_n);
        CAPTURE(kt);
        const int threads = contract::consumer_threads(groups), granules = kt * tile_n / 2 / 4;
        std::vector<int> owner(contract::partial_slot_floats() / 4, -1);
        bool inside = true, distinct = true, linear = true, warps_contiguous = true;
        for (int t = 0; t < threads; ++t)
          for (int g = 0; g < granules; ++g) {
            const int at = contract::partial_granule(g, t, threads);
            if (at < 0 || at >= int(owner.size())) {
              inside = false;
              continue;
            }
            distinct &= owner[at] < 0, owner[at] = t;
            linear &= at == contract::partial_granule(g, 0, threads) + t;  // the kernel's base + t, then g's offset
            // A warp's lanes at one granule: 32 float4s back to back (one 512-byte request, 16 full sectors).
            if (t % 32) warps_contiguous &= at == contract::partial_granule(g, t - t % 32, threads) + t % 32;
          }
        CHECK(inside);
        CHECK(distinct);
        CHECK(linear);
        CHECK(warps_contiguous);
      }
}

TEST_CASE("the role kernels keep programmatic dependent launch in their PTX") {
  codegen::MoeConfig c = codegen::builtin_model("glm5.2");
  codegen::MoeCodegenOptions o;
  o.input_bf16 = true;
  const codegen::MoeLaunchPlan plan = codegen::plan_launch(c, 8, codegen::builtin_profile("h200"), o);
  CHECK(codegen::moe_dispatch_spec(c, plan)->required_instructions ==
        std::vector<std::string>{"griddepcontrol.launch_dependents"});
  const codegen::KernelSpec fin = codegen::moe_finalize_spec(c, plan);
  CHECK(fin.required_instructions == std::vector<std::string>{"griddepcontrol.wait"});
  const std::vector<std::string> compute = codegen::moe_compute_spec(c, plan).required_instructions;
  CHECK(std::find(compute.begin(), compute.end(), "griddepcontrol.wait") != compute.end());
  CHECK(std::find(compute.begin(), compute.end(), "griddepcontrol.launch_dependents") != compute.end());
}
