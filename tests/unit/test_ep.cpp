// Expert parallelism without a GPU: what R > 1 changes in the plan, the
// kernels and the workspace, and the checks of a rank workspace's set-up.
// (The protocol itself runs in tests/gpu/test_ep_gpu.cpp.)
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <regex>
#include <string>
#include <vector>

#include "codegen/moe_kernels.hpp"
#include "jit/kernel_builder.hpp"
#include "oracle/ep_inputs.hpp"
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

namespace {
codegen::MoeLaunchPlan plan_of(const char* model, int ranks, int batch, codegen::MoeCodegenOptions o = {},
                               int token_capacity = 256) {
  codegen::MoeConfig c = with_ranks(codegen::builtin_model(model), ranks);
  c.token_capacity = token_capacity;
  return codegen::plan_launch(c, batch, codegen::builtin_profile("h200"), o);
}
bool noted(const codegen::MoeLaunchPlan& p, const std::string& text) {
  return std::any_of(p.notes.begin(), p.notes.end(),
                     [&](const std::string& n) { return n.find(text) != std::string::npos; });
}
// Sets an environment variable for one scope.
struct ScopedEnv {
  std::string name;
  ScopedEnv(std::string n, const char* value) : name(std::move(n)) { setenv(name.c_str(), value, 1); }
  ~ScopedEnv() { unsetenv(name.c_str()); }
};
}  // namespace

TEST_CASE("expert parallelism: the planner's Table 2 decisions for R > 1 (pull or mirror, staged returns, scan)") {
  using namespace contract;
  // k >= R (GLM5.2's k = 8 at R = 2, 4, 8; DSV4.1-Flash's k = 6 at R = 2, 4): the pull, returns staged.
  for (const auto& [model, ranks] : std::vector<std::pair<const char*, int>>{
           {"glm5.2", 2}, {"glm5.2", 4}, {"glm5.2", 8}, {"dsv4.1-flash", 2}, {"dsv4.1-flash", 4}}) {
    CAPTURE(model);
    CAPTURE(ranks);
    for (const int B : {1, 2, 8, 256}) {
      CAPTURE(B);
      const codegen::MoeLaunchPlan p = plan_of(model, ranks, B);
      CHECK(p.ep.mode == (kEpPull | kEpStagedReturns));  // no direct scan: the compute role waits on the pull
      CHECK(p.ep.dispatch_sms == 0);
      CHECK(noted(p, "EP pull: yes"));
    }
  }
  // k < R (DSV4.1-Flash at R = 8, Table 2's second row): mirrored metadata, the direct path, the scan at B <= 2.
  CHECK(plan_of("dsv4.1-flash", 8, 1).ep.mode == (kEpMirror | kEpDirectScan));
  CHECK(plan_of("dsv4.1-flash", 8, 2).ep.mode == (kEpMirror | kEpDirectScan));
  CHECK(plan_of("dsv4.1-flash", 8, 3).ep.mode == kEpMirror);
  CHECK(noted(plan_of("dsv4.1-flash", 8, 8), "EP staged returns: no, with mirrored metadata"));
  // The relay arena past its budget (R Bcap k 2H = 8 x 512 x 8 x 12 KiB = 384 MiB): returns go direct.
  const codegen::MoeLaunchPlan big = plan_of("glm5.2", 8, 8, {}, 512);
  CHECK(big.ep.mode == kEpPull);
  CHECK(noted(big, "exceeds 256 MiB"));
  // One rank: none of it.
  CHECK(plan_of("glm5.2", 1, 1).ep == codegen::EpPlan{});
  // The plan's bits are what every role is specialized on, and what the workspace is laid out for.
  for (const codegen::MoeLaunchPlan& p : {plan_of("glm5.2", 4, 8), plan_of("dsv4.1-flash", 8, 1)}) {
    const codegen::MoeConfig c = with_ranks(codegen::builtin_model(p.model), p.model == "glm5.2" ? 4 : 8);
    for (const codegen::KernelSpec& s : codegen::moe_role_specs(c, p)) CHECK(constant(s, "kEp") == p.ep.mode);
    const WorkspaceLayout l = contract::workspace_layout(codegen::workspace_dims(c, p.contract_path, p.ep.mode));
    const bool pull = p.ep.has(kEpPull), mirror = p.ep.has(kEpMirror), staged = p.ep.has(kEpStagedReturns);
    CHECK((l.ep_ids > l.ep_tokens) == (pull || mirror));
    CHECK((l.ep_rows > l.ep_scales) == mirror);
    CHECK((l.ep_relay - l.ep_rows) == (pull ? c.ranks * (l.handoff - l.x_q) : 0));
    CHECK((l.partial_flag - l.ep_relay) ==
          (staged ? 2LL * c.ranks * c.token_capacity * c.top_k * codegen::padded_hidden(c) : 0));
  }
}

TEST_CASE("expert parallelism: EP overrides are checked, and MOEJIT_DISPATCH_SMS splits the SMs") {
  using namespace contract;
  auto error_of = [](auto&& f) -> std::string {
    try {
      f();
    } catch (const codegen::ConfigError& e) {
      return e.field() + ": " + e.what();
    }
    return "no error";
  };
  codegen::MoeCodegenOptions o;
  o.ep_mode = kEpMirror | kEpPull;
  CHECK(error_of([&] { plan_of("glm5.2", 2, 8, o); })
            .find("ep_mode: ep_mode = 3 (mirror+pull) is invalid: mirror "
                  "and pull are alternatives") == 0);
  o.ep_mode = kEpPull | kEpDirectScan;
  CHECK(error_of([&] { plan_of("glm5.2", 2, 8, o); }).find("ep_mode: ep_mode = 10 (pull+direct-scan) is invalid") == 0);
  o.ep_mode = kEpStagedReturns;
  CHECK(error_of([&] { plan_of("glm5.2", 1, 8, o); })
            .find("ep_mode: ep_mode = 4 (staged-returns) is invalid with "
                  "ranks R = 1") == 0);
  o.ep_mode = 16;
  CHECK(error_of([&] { plan_of("glm5.2", 2, 8, o); })
            .find("ep_mode: ep_mode = 16 is outside the allowed range "
                  "[0, 15]") == 0);
  o.ep_mode = kEpMirror | kEpDirectScan;  // a valid override is taken as it is
  CHECK(plan_of("glm5.2", 2, 64, o).ep.mode == (kEpMirror | kEpDirectScan));
  CHECK(codegen::parse_ep_mode("mirror+direct-scan") == (kEpMirror | kEpDirectScan));
  CHECK(codegen::parse_ep_mode("none") == 0);
  CHECK_FALSE(codegen::parse_ep_mode("pull+pull"));
  CHECK_FALSE(codegen::parse_ep_mode("pull+"));
  CHECK_FALSE(codegen::parse_ep_mode("relay"));

  // The split: compute CTAs on the SMs the dispatch role does not get, the dispatch role's on those.
  const codegen::MoeLaunchPlan shared = plan_of("glm5.2", 4, 256);
  {
    const ScopedEnv env("MOEJIT_DISPATCH_SMS", "12");
    const codegen::MoeLaunchPlan split = plan_of("glm5.2", 4, 256);
    CHECK(split.ep.dispatch_sms == 12);
    CHECK(split.compute.grid == split.compute.blocks_per_sm * (132 - 12));
    CHECK(shared.compute.grid == shared.compute.blocks_per_sm * 132);
    CHECK(split.dispatch.grid == 2 * 12);
    CHECK(noted(split, "dispatch SMs: 12 of 132 kept out of the compute grid (MOEJIT_DISPATCH_SMS)"));
    // The compute kernel is another one (its grid is a constant of it).
    const codegen::MoeConfig c = with_ranks(codegen::builtin_model("glm5.2"), 4);
    CHECK(constant(codegen::moe_compute_spec(c, split), "kGrid") == split.compute.grid);
    // The option wins over the environment; one rank ignores the environment.
    codegen::MoeCodegenOptions six;
    six.dispatch_sms = 6;
    CHECK(plan_of("glm5.2", 4, 256, six).ep.dispatch_sms == 6);
    CHECK(plan_of("glm5.2", 1, 256).ep.dispatch_sms == 0);
    CHECK(noted(plan_of("glm5.2", 1, 256), "MOEJIT_DISPATCH_SMS is ignored with one rank"));
    six.dispatch_sms = 132;
    CHECK(error_of([&] { plan_of("glm5.2", 4, 8, six); })
              .find("dispatch_sms: dispatch_sms = 132 is outside the "
                    "allowed range [0, 131]") == 0);
  }
  {
    const ScopedEnv env("MOEJIT_DISPATCH_SMS", "lots");
    CHECK(error_of([&] { plan_of("glm5.2", 4, 8); })
              .find("MOEJIT_DISPATCH_SMS: MOEJIT_DISPATCH_SMS = 'lots' is "
                    "invalid: must be an integer in [0, 131]") == 0);
  }
}

// Each bit toggles the kernels it should and no other: the PTX of every role with and without it, from a plan
// whose other bits are off (DSV4.1-Flash at R = 4).
TEST_CASE("expert parallelism: each EP mode bit changes the emitted kernels of the roles it belongs to") {
  using namespace contract;
  const codegen::MoeConfig c = with_ranks(codegen::builtin_model("dsv4.1-flash"), 4);
  auto ptx_of = [&](int mode) {
    codegen::MoeCodegenOptions o;
    o.ep_mode = mode;
    const codegen::MoeLaunchPlan p = codegen::plan_launch(c, 8, codegen::builtin_profile("h200"), o);
    std::vector<std::string> out;
    // The code, not the names and data: a template's mangled names carry its constants, kEp among them, and so
    // do the debug sections' bytes, the comments and the (unread) globals NVRTC emits for static constexpr members.
    static const std::regex mangled("_Z[A-Za-z0-9_]+"),
        names(R"(^\s*(\.b8|//|\.loc|\.file|\.global).*$)", std::regex::multiline);
    for (const codegen::KernelSpec& s : codegen::moe_role_specs(c, p))
      out.push_back(std::regex_replace(std::regex_replace(jit::build_kernel(s).ptx, mangled, "_Z"), names, ""));
    return out;  // dispatch, compute, finalize
  };
  const std::vector<std::string> base = ptx_of(0);
  REQUIRE(base.size() == 3);
  struct Toggle {
    int bit;
    bool dispatch, compute, finalize;
  };
  for (const Toggle t : {Toggle{kEpMirror, true, true, false}, Toggle{kEpPull, true, true, false},
                         Toggle{kEpStagedReturns, false, true, true}, Toggle{kEpDirectScan, false, true, false}}) {
    CAPTURE(codegen::ep_mode_names(t.bit));
    const std::vector<std::string> on = ptx_of(t.bit);
    CHECK((on[0] != base[0]) == t.dispatch);
    CHECK((on[1] != base[1]) == t.compute);
    CHECK((on[2] != base[2]) == t.finalize);
  }
}

TEST_CASE("the expert-parallel routing matrix: an idle last rank, all-remote tokens, and its bad arguments named") {
  const reference::MoeProblem p = oracle::problem_of(codegen::builtin_model("glm5.2"));
  const int R = 2, B = 8, k = p.top_k, per_rank = p.experts / R;
  for (int routing = 0; routing < oracle::k_ep_routings; ++routing) {
    CAPTURE(routing);
    const oracle::RandomInputs in = oracle::ep_inputs(p, R, B, routing, 42 + routing);
    REQUIRE(in.routing.ids.size() == std::size_t(R * B * k));
    REQUIRE(in.xq.elements.size() == std::size_t(R * B) * p.hidden);
    int on_last = 0;
    for (int id : in.routing.ids) on_last += id >= (R - 1) * per_rank;
    if (routing == 4) CHECK(on_last == 0);  // the last rank receives nothing
    for (int t = 0; t < R * B; ++t) {
      std::vector<int> ids(in.routing.ids.begin() + t * k, in.routing.ids.begin() + (t + 1) * k);
      std::sort(ids.begin(), ids.end());
      CHECK(std::adjacent_find(ids.begin(), ids.end()) == ids.end());  // k distinct experts
      // Rank 0's tokens: every expert on the last rank (all remote).
      if (routing == 5 && t < B) CHECK(ids.front() >= (R - 1) * per_rank);
    }
  }
  CHECK(oracle::ep_routing_name(4) == "last-rank-idle");
  CHECK(oracle::ep_routing_name(5) == "all-remote");
  CHECK_THROWS_WITH_AS(oracle::ep_inputs(p, 3, B, 0, 1), doctest::Contains("ranks = 3 must be at least 2 and divide"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(oracle::ep_inputs(p, R, 0, 0, 1), doctest::Contains("per_rank_tokens = 0"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(oracle::ep_inputs(p, R, B, 6, 1), doctest::Contains("routing = 6 is outside [0, 6)"),
                       std::invalid_argument);
}

TEST_CASE("the EP benches' baseline routes and link traffic, on a routing small enough to count by hand") {
  // E = 8 experts on R = 2 ranks (rank 1: experts 4..7), k = 2, B = 2 tokens a rank (tokens 2, 3 are rank 1's).
  reference::Routing g;
  g.ids = {4, 5, /*token 1*/ 0, 1, /*token 2*/ 4, 0, /*token 3*/ 6, 2};
  g.weights = {0.5f, 0.5f, 0.25f, 0.75f, 0.4f, 0.6f, 0.9f, 0.1f};
  // Rank 1 computes token 0's two routes and token 2's route to expert 4 and token 3's to 6 (its own); token 0 is
  // the one other-rank token it pulls. Rank 1's tokens send token 2's route to 0 and token 3's to 2 to rank 0.
  const oracle::EpTraffic t1 = oracle::ep_traffic(g, 8, 2, 1, 2, 2);
  CHECK(t1.pulled_routes == 2);
  CHECK(t1.pulled_tokens == 1);
  CHECK(t1.returned_routes == 2);
  const oracle::EpTraffic t0 = oracle::ep_traffic(g, 8, 2, 0, 2, 2);
  CHECK(t0.pulled_routes == 2);  // token 2 -> 0, token 3 -> 2
  CHECK(t0.pulled_tokens == 2);
  CHECK(t0.returned_routes == 2);
  const int H = 64;
  CHECK(t1.bytes(H, true) == 1 * (2.0 * H + H / 32.0) + 2 * 2.0 * H);
  CHECK(t1.bytes(H, false) == 2 * (2.0 * H + H / 32.0) + 2 * 2.0 * H);
  // Rank 1's baseline: local ids 0 (expert 4, two routes), 1 (expert 5, one), 2 (expert 6, one); the four
  // other-rank routes go, weight 0, to the least loaded touched expert each time (lowest id on a tie).
  const oracle::BaselineRoutes b = oracle::baseline_routes(g, 8, 2, 1);
  CHECK(b.touched == 3);
  CHECK(b.ids == std::vector<std::int32_t>{0, 1, 1, 2, 0, 0, 2, 1});
  CHECK(b.weights == std::vector<float>{0.5f, 0.5f, 0.0f, 0.0f, 0.4f, 0.0f, 0.9f, 0.0f});
}
