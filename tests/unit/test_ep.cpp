// Expert parallelism without a GPU: what R > 1 changes in the plan, the
// kernels and the workspace, and the checks of a rank workspace's set-up.
// (The protocol itself runs in tests/gpu/test_ep_gpu.cpp.)
#include <doctest/doctest.h>

#include <chrono>
#include <string>
#include <vector>

#include "codegen/moe_kernels.hpp"
#include "jit/kernel_builder.hpp"
#include "runtime/ep_ranks.hpp"
#include "runtime/moe_layer.hpp"
#include "templates/moe_contract.cuh"

using namespace moejit;

namespace {
std::int64_t constant(const codegen::KernelSpec& s, const std::string& name) {
  for (const auto& [n, v] : s.constants)
    if (n == name) return v;
  FAIL("no constant ", name, " in ", s.kernel);
  return -1;
}
bool has_param(const codegen::KernelSpec& s, const std::string& name) {
  for (const auto& p : s.params)
    if (p.name == name) return true;
  return false;
}
codegen::MoeConfig with_ranks(codegen::MoeConfig c, int ranks) {
  c.ranks = ranks;
  return c;
}
}  // namespace

TEST_CASE("expert parallelism: R > 1 launches the dispatch role and specializes every role on its ranks") {
  const codegen::DeviceProfile h200 = codegen::builtin_profile("h200");
  for (const char* model : {"glm5.2", "gpt-oss-20b"}) {
    for (const codegen::Recipe recipe : {codegen::Recipe::w4a8_mx, codegen::Recipe::w4a16}) {
      codegen::MoeConfig c = codegen::builtin_model(model);
      c.recipe = recipe;
      CAPTURE(model);
      CAPTURE(codegen::recipe_name(recipe));
      for (const int ranks : {1, 2, 4}) {
        CAPTURE(ranks);
        const codegen::MoeConfig cr = with_ranks(c, ranks);
        const codegen::MoeLaunchPlan plan = codegen::plan_launch(cr, 8, h200);
        // The other ranks read this rank's rows and routes from its workspace, where only the dispatch role puts
        // them: it runs even where one GPU needs none (W4A16 on an H that needs no padding).
        if (ranks > 1) {
          CHECK(plan.dispatch.launched);
          CHECK(std::any_of(plan.notes.begin(), plan.notes.end(), [&](const std::string& n) {
            return n.find("publishes them with the routes to the other " + std::to_string(ranks - 1)) !=
                   std::string::npos;
          }));
        }
        const std::vector<codegen::KernelSpec> specs = codegen::moe_role_specs(cr, plan);
        for (const codegen::KernelSpec& s : specs) {
          CAPTURE(s.kernel);
          CHECK(constant(s, "kRanks") == ranks);
          CHECK(constant(s, "kExperts") == c.experts / ranks);
        }
        if (plan.dispatch.launched) {
          CHECK(has_param(specs.front(), "topk_ids"));
          CHECK(has_param(specs.front(), "topk_weights"));
        }
      }
    }
  }
}

TEST_CASE("expert parallelism: the workspace holds every rank's routes for GEMM1's handoff and publishes its own") {
  const contract::MoeDims one{128, 8, 6144, 2048, 256, contract::kPathSm90Fp8, 0};
  contract::MoeDims four = one;
  four.ranks = 4;
  const contract::WorkspaceLayout a = contract::workspace_layout(one), b = contract::workspace_layout(four);
  // The handoff and its scale records: a row per route of all four ranks' tokens that this rank may compute.
  CHECK(b.handoff_s - b.handoff == 4 * (a.handoff_s - a.handoff));
  CHECK(b.arena - b.handoff_s == 4 * (a.arena - a.handoff_s));
  // The arena: this rank's own routes, which the owners of their experts write.
  CHECK(b.route_ids - b.arena == a.route_ids - a.arena);
  // Routes published for the other ranks: ids and weights, Bcap * k each; none on one rank.
  CHECK(a.route_weights == a.route_ids);
  CHECK(a.partial_flag == a.route_ids);
  CHECK(b.route_weights - b.route_ids == 4 * 256 * 8);
  CHECK(b.partial_flag - b.route_weights == 4 * 256 * 8);
  // The header carries the peer table (contract::kMaxRanks workspaces).
  CHECK(a.ready >= static_cast<long long>(sizeof(contract::MoeHeader)));
  CHECK(sizeof(contract::MoeHeader::peers) == 8 * contract::kMaxRanks);
}

TEST_CASE("expert parallelism: the compute role of a rank compiles for both sm_90a paths without spills") {
  const codegen::DeviceProfile h200 = codegen::builtin_profile("h200");
  for (const codegen::ComputePath path : {codegen::ComputePath::fast, codegen::ComputePath::exact}) {
    CAPTURE(codegen::path_name(path));
    codegen::MoeCodegenOptions o;
    o.path = path;
    const codegen::MoeConfig c = with_ranks(codegen::builtin_model("dsv4.1-flash"), 4);
    const codegen::MoeLaunchPlan plan = codegen::plan_launch(c, 64, h200, o);
    for (const codegen::KernelSpec& s : codegen::moe_role_specs(c, plan)) {
      CAPTURE(s.kernel);
      const jit::BuildArtifacts built = jit::build_kernel(s);
      CHECK(!built.cubin.empty());
      REQUIRE(built.resources.kernels.size() == 1);
      CHECK(built.resources.kernels[0].spill_store_bytes == 0);
      CHECK(built.resources.kernels[0].spill_load_bytes == 0);
    }
  }
}

TEST_CASE("expert parallelism: a rank's weights are the checkpoint's arrays from its first expert") {
  const codegen::MoeConfig glm = codegen::builtin_model("glm5.2");  // H = 6144, I = 2048, E = 256
  const runtime::CheckpointWeightsDevice all{0x100000000, 0x200000000, 0x300000000,
                                             0x400000000, 0x500000000, 0x600000000};
  const runtime::CheckpointWeightsDevice s = runtime::expert_shard(all, glm, 3, 4);  // experts 192 ...
  CHECK(s.w1 == all.w1 + 192ull * 4096 * 3072);
  CHECK(s.s1 == all.s1 + 192ull * 4096 * 192);
  CHECK(s.w2 == all.w2 + 192ull * 6144 * 1024);
  CHECK(s.s2 == all.s2 + 192ull * 6144 * 64);
  CHECK(s.b1 == all.b1 + 192ull * 4096 * 2);
  CHECK(s.b2 == all.b2 + 192ull * 6144 * 2);
  CHECK(runtime::expert_shard({0x1000, 0x2000, 0x3000, 0x4000, 0, 0}, glm, 1, 2).b1 == 0);  // no biases stay none
  CHECK_THROWS_WITH_AS(runtime::expert_shard(all, glm, 4, 4), "rank = 4 is outside the allowed range [0, 3]",
                       runtime::InvalidInput);
  CHECK_THROWS_WITH_AS(runtime::expert_shard(all, glm, 0, 3), "ranks = 3 is invalid: the 256 experts must split evenly",
                       runtime::InvalidInput);
}

TEST_CASE("expert parallelism: a rank forwards on the caller's workspace only") {
  codegen::MoeConfig c = codegen::builtin_model("glm5.2");
  c.ranks = 2;
  runtime::MoeForwardArgs a{0x1000, 0x2000, 0, 0x3000, 0x4000, 0x5000, 8};
  CHECK_THROWS_WITH_AS(runtime::validate_forward_args(c, {}, a),
                       "workspace = 0x0 is invalid with ranks R = 2: a rank runs on the caller's workspace, set up "
                       "with init_rank_workspace (docs/expert-parallelism.md)",
                       runtime::InvalidInput);
  a.workspace = 0x100000;
  CHECK_NOTHROW(runtime::validate_forward_args(c, {}, a));
  c.ranks = 1;
  a.workspace = 0;
  CHECK_NOTHROW(runtime::validate_forward_args(c, {}, a));
}

TEST_CASE("expert parallelism: a rank workspace's set-up is checked before it touches the GPU") {
  using runtime::InvalidInput;
  const std::vector<CUdeviceptr> peers = {0x10000, 0x20000};
  const auto timeout = std::chrono::milliseconds(100);
  auto error = [&](CUdeviceptr ws, int rank, std::vector<CUdeviceptr> p, std::chrono::nanoseconds t) {
    try {
      runtime::init_rank_workspace(ws, 1 << 20, rank, p, t, nullptr);
    } catch (const InvalidInput& e) {
      return e.field() + " | " + e.what();
    }
    return std::string("accepted");
  };
  CHECK(runtime::k_peer_table_offset % 8 == 0);
  CHECK(runtime::k_peer_table_offset + 8 * contract::kMaxRanks <= sizeof(contract::MoeHeader));
  CHECK(error(0x10000, 0, {0x10000}, timeout) == "peers | peers holds 1 workspaces: must be in [2, 32] (one per rank)");
  CHECK(error(0x10000, 2, peers, timeout) == "rank | rank = 2 is outside the allowed range [0, 1]");
  CHECK(error(0x10000, 1, peers, timeout) ==
        "peers | peers[1] = 0x20000 is invalid: it must be this rank's workspace 0x10000");
  CHECK(error(0x10000, 0, {0x10000, 0x20010}, timeout) ==
        "peers | peers[1] = 0x20010 is invalid: must be a non-null 256-byte aligned workspace");
  CHECK(error(0x10000, 0, peers, std::chrono::nanoseconds(0)) == "timeout | timeout = 0 ns is invalid: must be > 0");
  // The header alone (the NCCL deployment fills the peer table on the device).
  auto header_error = [&](CUdeviceptr ws, int rank, int ranks) {
    try {
      runtime::init_rank_header(ws, 1 << 20, rank, ranks, timeout, nullptr);
    } catch (const InvalidInput& e) {
      return e.field() + " | " + e.what();
    }
    return std::string("accepted");
  };
  CHECK(header_error(0x10000, 0, 1) == "ranks | ranks = 1 is outside the allowed range [2, 32]");
  CHECK(header_error(0x10000, 0, 33) == "ranks | ranks = 33 is outside the allowed range [2, 32]");
  CHECK(header_error(0x10000, -1, 2) == "rank | rank = -1 is outside the allowed range [0, 1]");
  CHECK(header_error(0x10080, 0, 2) == "ws | ws = 0x10080 is invalid: must be a non-null 256-byte aligned workspace");
}
