// The MoE kernels without a GPU: every kernel the launch plan can choose
// compiles and assembles within its plan (registers, no spills, its MMA, wgmma
// left asynchronous), and the layer's input checks. The plan's choices at
// small B are test_moe_plan_choices.cpp, its schedules test_moe_plan_schedules.cpp.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "codegen/moe_kernels.hpp"
#include "codegen/plan_steps.hpp"
#include "codegen/planner.hpp"
#include "jit/kernel_builder.hpp"
#include "runtime/moe_layer.hpp"
#include "runtime/weight_packing.hpp"

using namespace moejit;

namespace {
struct Variant {
  codegen::MoeConfig config;
  codegen::DeviceProfile profile;
  codegen::MoeCodegenOptions options;
};

// Every (built-in model, target profile, path, recipe) the planner serves.
std::vector<Variant> variants() {
  std::vector<Variant> out;
  for (const std::string& model : codegen::builtin_model_names())
    for (const char* profile : {"h200", "rtx-pro-5000"})
      for (codegen::ComputePath path : {codegen::ComputePath::fast, codegen::ComputePath::exact})
        for (codegen::Recipe recipe : {codegen::Recipe::w4a8_mx, codegen::Recipe::w4a16}) {
          const codegen::DeviceProfile p = codegen::builtin_profile(profile);
          if (!codegen::find_atom(p.target, path, recipe)) continue;
          codegen::MoeCodegenOptions o;
          o.path = path;
          o.input_bf16 = recipe == codegen::Recipe::w4a16;  // W4A16's activations are BF16
          codegen::MoeConfig config = codegen::builtin_model(model);
          config.recipe = recipe;
          out.push_back({config, p, o});
          // The fused shared expert (glm5.2, dsv4.1-flash) on the H200: the fast and the W4A16 atom.
          const bool shared = model == "glm5.2" || model == "dsv4.1-flash";
          if (shared && std::string(profile) == "h200" &&
              (path == codegen::ComputePath::fast) == (recipe == codegen::Recipe::w4a8_mx)) {
            codegen::MoeConfig with = codegen::builtin_model(model, /*shared_expert=*/true);
            with.recipe = recipe;
            out.push_back({with, p, o});
          }
        }
  return out;
}

// The SM sub-partition rule the plan's register cap is derived from, checked
// against the registers the cubin really uses.
bool resident(const codegen::RolePlan& r, int registers, const codegen::DeviceProfile& d) {
  const int warps_per_partition = (r.blocks_per_sm * r.threads / 32 + 3) / 4;
  const int regs_per_warp = (registers * 32 + 255) / 256 * 256;
  return warps_per_partition * regs_per_warp <= d.regs_per_sm / 4 &&
         r.blocks_per_sm * r.threads <= d.max_threads_per_sm &&
         r.blocks_per_sm * (r.smem_bytes + 1024) <= d.smem_per_sm;
}
}  // namespace

TEST_CASE("plan == launch: every kernel of both models at B = 1..256 on every target fits its plan") {
  std::map<std::string, jit::BuildArtifacts> built;  // by the spec's every key field
  int plans = 0;
  for (const Variant& v : variants()) {
    CAPTURE(v.config.name);
    CAPTURE(v.profile.name);
    CAPTURE(codegen::path_name(*v.options.path));
    CAPTURE(codegen::recipe_name(v.config.recipe));
    for (int b = 1; b <= 256; ++b) {
      const codegen::MoeLaunchPlan plan = codegen::plan_launch(v.config, b, v.profile, v.options);
      ++plans;
      // The grid is the planned residency on every SM; the compute role is persistent.
      REQUIRE(plan.compute.grid == plan.compute.blocks_per_sm * v.profile.sm_count);
      for (const codegen::KernelSpec& spec : codegen::moe_role_specs(v.config, plan)) {
        const codegen::RolePlan& role = spec.kernel == "moe_dispatch"  ? plan.dispatch
                                        : spec.kernel == "moe_compute" ? plan.compute
                                                                       : plan.finalize;
        REQUIRE(role.launched);
        // What the entry is compiled for is what the plan launches.
        CHECK(spec.threads == role.threads);
        if (spec.kernel != "moe_compute") continue;
        CHECK(spec.min_blocks_per_sm == role.blocks_per_sm);
        CHECK(spec.max_registers == role.register_cap);
        auto it = built.find(spec.summary());
        if (it == built.end()) it = built.emplace(spec.summary(), jit::build_kernel(spec)).first;
        // The entry's static_asserts held (SMEM, threads, workspace): it compiled. What ptxas allocated fits.
        const codegen::KernelResources* res = it->second.resources.find(spec.entry_name());
        REQUIRE(res);
        CHECK(res->registers <= role.register_cap);
        CHECK(res->spill_store_bytes == 0);
        CHECK(res->local_bytes == 0);
        CHECK(resident(role, res->registers, v.profile));
        for (const std::string& instr : spec.required_instructions)
          CHECK(it->second.final_ptx.find(instr) != std::string::npos);
        // ptxas keeps wgmma asynchronous only when it does not report serializing it.
        CHECK(it->second.link_log.find("serialized") == std::string::npos);
      }
    }
  }
  // Not vacuous: 4 models x the atoms each (model, target, path, recipe) has, and the shared expert's (20), each
  // with at least one compute kernel of its own.
  REQUIRE(variants().size() == 20);
  CHECK(plans == 256 * int(variants().size()));
  CHECK(built.size() >= variants().size());
  MESSAGE(built.size() << " distinct compute kernels built for " << plans << " plans");
}

TEST_CASE("a layer shares role kernels between two B only where every role's spec is the same") {
  // MoeLayer loads a B's role kernels once per role_kernels_key: two B under one key launch the same kernels.
  int shared = 0;
  for (const Variant& v : variants()) {
    CAPTURE(v.config.name);
    CAPTURE(v.profile.name);
    CAPTURE(codegen::path_name(*v.options.path));
    CAPTURE(codegen::recipe_name(v.config.recipe));
    std::map<std::string, std::pair<int, std::vector<codegen::KernelSpec>>> by_key;
    for (int b = 1; b <= 256; ++b) {
      const std::vector<codegen::KernelSpec> specs =
          codegen::moe_role_specs(v.config, codegen::plan_launch(v.config, b, v.profile, v.options));
      auto [it, fresh] = by_key.try_emplace(codegen::role_kernels_key(specs), b, specs);
      if (fresh) continue;
      ++shared;
      CAPTURE(it->second.first);
      CAPTURE(b);
      CHECK(it->second.second == specs);
    }
  }
  CHECK(shared > 0);
  // A finalize (or dispatch) kernel that changes under the same compute kernel is another key.
  const Variant v = variants().front();  // a copy: variants() returns by value
  const std::vector<codegen::KernelSpec> specs =
      codegen::moe_role_specs(v.config, codegen::plan_launch(v.config, 1, v.profile, v.options));
  for (size_t role = 0; role < specs.size(); ++role) {
    CAPTURE(specs[role].kernel);
    std::vector<codegen::KernelSpec> other = specs;
    other[role].threads /= 2;
    CHECK(codegen::role_kernels_key(other) != codegen::role_kernels_key(specs));
  }
}

TEST_CASE("the fused shared expert is expert E of the weights and one more route per token, in every role") {
  const codegen::DeviceProfile h200 = codegen::builtin_profile("h200");
  const codegen::MoeConfig plain = codegen::builtin_model("dsv4.1-flash");
  const codegen::MoeConfig shared = codegen::builtin_model("dsv4.1-flash", /*shared_expert=*/true);
  const int E = plain.local_experts(), cap = plain.token_capacity, k = plain.top_k;
  CHECK(shared.weight_experts() == E + 1);
  CHECK(plain.weight_experts() == E);
  // Weights: one more expert's step blobs in each projection.
  for (codegen::Projection w : {codegen::Projection::w1, codegen::Projection::w2})
    CHECK(runtime::packed_bytes(shared, w) * E == runtime::packed_bytes(plain, w) * (E + 1));
  for (int b : {1, 64, 256}) {
    CAPTURE(b);
    const codegen::MoeLaunchPlan p0 = codegen::plan_launch(plain, b, h200, {});
    const codegen::MoeLaunchPlan p1 = codegen::plan_launch(shared, b, h200, {});
    // The workspace holds Bcap more routes (handoff row, its scale records, arena row) and one more readiness row.
    const contract::MoeDims d0 = codegen::workspace_dims(plain, p0.contract_path);
    const contract::MoeDims d1 = codegen::workspace_dims(shared, p1.contract_path);
    CHECK(d1.shared == 1);
    CHECK(contract::shared_route0(d1) == (long long)cap * k);
    CHECK(contract::route_capacity(d1) == (long long)cap * (k + 1));
    const contract::WorkspaceLayout l0 = contract::workspace_layout(d0), l1 = contract::workspace_layout(d1);
    CHECK(l1.arena - l1.handoff > l0.arena - l0.handoff);
    CHECK(l1.partial_flag - l1.arena == contract::align_up(2LL * cap * (k + 1) * d1.hidden, 256));
    CHECK(std::any_of(p1.notes.begin(), p1.notes.end(), [&](const std::string& n) {
      return n.rfind("fused shared expert: expert " + std::to_string(E), 0) == 0;
    }));
    // Every role is compiled for it: the compute and finalize templates take kShared, the transform E + 1 experts.
    for (const codegen::KernelSpec& spec : codegen::moe_kernel_specs(shared, b, h200, {})) {
      CAPTURE(spec.kernel);
      auto constant = [&](const std::string& name) {
        for (const auto& [n, v] : spec.constants)
          if (n == name) return v;
        return std::int64_t{-1};
      };
      if (spec.kernel == "moe_weight_transform")
        CHECK(constant("kExperts") == E + 1);
      else
        CHECK(constant("kShared") == 1);
    }
  }
  // Its SMEM tables hold one more expert.
  CHECK(codegen::plan_launch(shared, 8, h200, {}).compute.smem_bytes >=
        codegen::plan_launch(plain, 8, h200, {}).compute.smem_bytes);
}

TEST_CASE("the routing prologue's tables fit 2048 experts at tile_n 8 on both sm_90a paths") {
  // The counts (4 B an expert) and, on the fast path, then the step costs (8 B an expert) alias the X tiles and
  // the weight steps.
  codegen::MoeConfig c = codegen::builtin_model("glm5.2");
  c.experts = 2048;
  c.shared_expert = codegen::SharedExpert{128};
  for (codegen::ComputePath path : {codegen::ComputePath::fast, codegen::ComputePath::exact}) {
    codegen::MoeCodegenOptions o;
    o.path = path;
    o.tile_n = 8;
    const codegen::MoeLaunchPlan plan = codegen::plan_launch(c, 8, codegen::builtin_profile("h200"), o);
    CHECK(plan.stages >= 2);
    CHECK(contract::compute_smem_valid(plan.contract_path, plan.groups, plan.tiles, plan.tile_n, plan.stages, 2049));
  }
}

TEST_CASE("every role and transform of each atom compiles and assembles, and the sm_120a atom keeps its MMA") {
  for (const Variant& v : variants()) {
    CAPTURE(v.profile.name);
    CAPTURE(codegen::path_name(*v.options.path));
    codegen::MoeCodegenOptions bf16 = v.options;
    bf16.input_bf16 = true;
    for (const codegen::KernelSpec& spec : codegen::moe_kernel_specs(v.config, 64, v.profile, bf16)) {
      if (spec.kernel == "moe_compute") continue;  // the test above
      CAPTURE(spec.summary());
      CHECK(!jit::build_kernel(spec).cubin.empty());
    }
    if (v.profile.target.arch == codegen::Arch::sm_120a) {
      const codegen::MoeLaunchPlan plan = codegen::plan_launch(v.config, 8, v.profile, v.options);
      const jit::BuildArtifacts a = jit::build_kernel(codegen::moe_compute_spec(v.config, plan));
      CHECK(a.final_ptx.find("mma.sync.aligned.kind::mxf8f6f4.block_scale.scale_vec::1X.m16n8k32.row.col.f32.e2m1."
                             "e4m3.f32.ue8m0") != std::string::npos);
      CHECK(a.final_ptx.find("mma.sync.aligned.m16n8k16") == std::string::npos);  // no BF16 fallback
    }
  }
}

TEST_CASE("the paths are the atoms the table says, and a target without one is refused") {
  CHECK(std::string(codegen::find_atom({codegen::Arch::sm_90a}, codegen::ComputePath::fast)->name) == "sm90-fp8-wgmma");
  CHECK(std::string(codegen::find_atom({codegen::Arch::sm_90a}, codegen::ComputePath::exact)->name) == "sm90-bf16-mma");
  CHECK(codegen::find_atom({codegen::Arch::sm_120a}, codegen::ComputePath::exact) == nullptr);
  codegen::MoeCodegenOptions exact;
  exact.path = codegen::ComputePath::exact;
  CHECK_THROWS_WITH_AS(
      codegen::plan_launch(codegen::builtin_model("glm5.2"), 8, codegen::builtin_profile("rtx-pro-5000"), exact),
      "rtx-pro-5000 (sm_120a) has no exact compute path for recipe w4a8-mx", codegen::PlanError);
  // The exact atom stages BF16 images and the fast one split rows (large and small elements): either way the
  // dispatch role always runs.
  const codegen::MoeLaunchPlan e =
      codegen::plan_launch(codegen::builtin_model("glm5.2"), 8, codegen::builtin_profile("h200"), exact);
  CHECK(e.dispatch.launched);
  codegen::MoeCodegenOptions fast;
  fast.path = codegen::ComputePath::fast;
  const codegen::MoeLaunchPlan f =
      codegen::plan_launch(codegen::builtin_model("glm5.2"), 8, codegen::builtin_profile("h200"), fast);
  CHECK(f.dispatch.launched);
  CHECK(std::any_of(f.notes.begin(), f.notes.end(),
                    [](const std::string& n) { return n.find("large and small elements") != std::string::npos; }));
  CHECK(std::none_of(e.notes.begin(), e.notes.end(),
                     [](const std::string& n) { return n.find("large and small elements") != std::string::npos; }));
  // W4A16: the exact atom's mainloop on the caller's BF16 rows, no dispatch role, and nothing but BF16 input.
  codegen::MoeConfig w4a16 = codegen::builtin_model("glm5.2");
  w4a16.recipe = codegen::Recipe::w4a16;
  codegen::MoeCodegenOptions bf16_in;
  bf16_in.input_bf16 = true;
  const codegen::MoeLaunchPlan w = codegen::plan_launch(w4a16, 8, codegen::builtin_profile("h200"), bf16_in);
  CHECK(w.atom == "sm90-bf16-mma-w4a16");
  CHECK(!w.dispatch.launched);
  CHECK(codegen::moe_compute_spec(w4a16, w).summary() !=
        codegen::moe_compute_spec(codegen::builtin_model("glm5.2"), e).summary());
  // Its one input format is implied: asked without input_bf16, the plan is the same.
  const codegen::MoeLaunchPlan implied = codegen::plan_launch(w4a16, 8, codegen::builtin_profile("h200"), exact);
  CHECK(implied.options.input_bf16);
  CHECK(codegen::moe_compute_spec(w4a16, implied).summary() == codegen::moe_compute_spec(w4a16, w).summary());
  codegen::MoeCodegenOptions fast_bf16 = fast;
  fast_bf16.input_bf16 = true;
  CHECK_THROWS_WITH_AS(codegen::plan_launch(w4a16, 8, codegen::builtin_profile("h200"), fast_bf16),
                       "h200 (sm_90a) has no fast compute path for recipe w4a16", codegen::PlanError);
  CHECK_THROWS_WITH_AS(codegen::plan_launch(w4a16, 8, codegen::builtin_profile("rtx-pro-5000"), bf16_in),
                       "rtx-pro-5000 (sm_120a) has no fast compute path for recipe w4a16", codegen::PlanError);
  // No path asked for: the fast path (on sm_90a it meets the exact path's accuracy bar on split rows), except
  // for W4A16, which has the exact atom only.
  const codegen::MoeLaunchPlan d =
      codegen::plan_launch(codegen::builtin_model("glm5.2"), 8, codegen::builtin_profile("h200"), {});
  CHECK(d.atom == "sm90-fp8-wgmma");
  CHECK(*d.options.path == codegen::ComputePath::fast);
  const codegen::MoeLaunchPlan dw = codegen::plan_launch(w4a16, 8, codegen::builtin_profile("h200"), {});
  CHECK(dw.atom == "sm90-bf16-mma-w4a16");
  CHECK(*dw.options.path == codegen::ComputePath::exact);
  CHECK(codegen::plan_launch(codegen::builtin_model("glm5.2"), 8, codegen::builtin_profile("rtx-pro-5000"), {}).atom ==
        "sm120-mxf8f6f4");
}

TEST_CASE("bad input is refused before any launch, naming the field, value and range") {
  // Every Table 10 field of the config has its own test with the planner
  // (test_planner_config.cpp); these are the layer's own limits and the
  // forward arguments.
  using runtime::InvalidInput;
  const codegen::MoeConfig glm = codegen::builtin_model("glm5.2");
  auto config_error = [&](auto mutate) {
    codegen::MoeConfig c = glm;
    mutate(c);
    try {
      runtime::validate_layer_config(c);
    } catch (const InvalidInput& e) {
      return e.field() + " | " + e.what();
    }
    return std::string("accepted");
  };
  CHECK(config_error([](auto&) {}) == "accepted");
  CHECK(config_error([](auto& c) { c.hidden = 520; }) ==
        "hidden | hidden H = 520 is invalid: must be a multiple of 32 in [512, 8192]");
  CHECK(config_error([](auto& c) { c.ranks = 8; }) == "accepted");  // expert parallelism (runtime/ep_ranks.hpp)
  CHECK(config_error([](auto& c) {
          c.ranks = 8;
          c.shared_expert = codegen::SharedExpert{128};
        }) ==
        "shared_expert | shared_expert = true is not supported with ranks R = 8 > 1: expert parallelism runs "
        "routed experts only (R = 1 fuses it)");
  CHECK(config_error([](auto& c) { c.experts = 4096; }) ==
        "experts | experts E = 4096 is outside the range this version supports [1, 2048]");
  CHECK(config_error([](auto& c) { c.shared_expert = codegen::SharedExpert{128}; }) == "accepted");

  runtime::MoeLayerOptions bad;
  bad.codegen.tile_n = 24;
  CHECK_THROWS_WITH_AS(runtime::validate_layer_options(bad),
                       "tile_n = 24 is invalid: must be 8, 16, 32 or 64 (0: as planned)", InvalidInput);
  bad.codegen.tile_n = 32;  // the fast atom stops at 16
  bad.codegen.path = codegen::ComputePath::fast;
  CHECK_THROWS_WITH_AS(codegen::plan_launch(glm, 8, codegen::builtin_profile("h200"), bad.codegen),
                       "tile_n = 32 is invalid: the sm90-fp8-wgmma atom runs token tiles up to 16", InvalidInput);

  const runtime::MoeLayerOptions opts;
  const runtime::MoeForwardArgs ok{0x1000, 0x2000, 0, 0x3000, 0x4000, 0x5000, 8};
  auto args_error = [&](auto mutate) {
    runtime::MoeForwardArgs a = ok;
    mutate(a);
    try {
      runtime::validate_forward_args(glm, opts, a);
    } catch (const InvalidInput& e) {
      return e.field() + " | " + e.what();
    }
    return std::string("accepted");
  };
  CHECK(args_error([](auto&) {}) == "accepted");
  CHECK(args_error([](auto& a) { a.tokens = 0; }) ==
        "tokens | tokens B = 0 is outside the allowed range [1, 256] (token capacity)");
  CHECK(args_error([](auto& a) { a.tokens = 257; }).rfind("tokens |", 0) == 0);
  CHECK(args_error([](auto& a) { a.x_q = 0; }) ==
        "x_q | x_q = 0x0 is invalid: must be a non-null 16-byte aligned device pointer");
  CHECK(args_error([](auto& a) { a.x_q = 0x1008; }).rfind("x_q |", 0) == 0);
  CHECK(args_error([](auto& a) { a.x_scales = 0x2002; }).rfind("x_scales |", 0) == 0);
  CHECK(args_error([](auto& a) { a.topk_ids = 0; }).rfind("topk_ids |", 0) == 0);
  CHECK(args_error([](auto& a) { a.topk_weights = 0x4001; }).rfind("topk_weights |", 0) == 0);
  CHECK(args_error([](auto& a) { a.y = 0x5004; }).rfind("y |", 0) == 0);
  CHECK(args_error([](auto& a) { a.workspace = 0x100000; }) == "accepted");  // a caller's workspace
  CHECK(args_error([](auto& a) { a.workspace = 0x100080; }) ==
        "workspace | workspace = 0x100080 is invalid: must be a non-null 256-byte aligned device pointer");
  runtime::MoeLayerOptions bf16 = opts;
  bf16.codegen.input_bf16 = true;
  CHECK_THROWS_WITH_AS(runtime::validate_forward_args(glm, bf16, ok),
                       "x_bf16 = 0x0 is invalid: must be a non-null 16-byte aligned device pointer", InvalidInput);

  CHECK_NOTHROW(runtime::validate_route_ids(glm, {0, 255, 3}));
  CHECK_THROWS_WITH_AS(runtime::validate_route_ids(glm, {0, 1, 2, 3, 4, 5, 6, 7, 8, 256}),
                       "topk_ids[1][1] = 256 is outside the allowed range [0, 256)", InvalidInput);
  CHECK_THROWS_WITH_AS(runtime::validate_route_ids(glm, {-1}),
                       "topk_ids[0][0] = -1 is outside the allowed range [0, 256)", InvalidInput);
  // With R ranks the ids are global: rank 0 of 2 (128 local experts) takes a token routed to expert 200.
  codegen::MoeConfig ep = glm;
  ep.ranks = 2;
  CHECK_NOTHROW(runtime::validate_route_ids(ep, {0, 1, 2, 3, 4, 5, 6, 200}));
  CHECK_THROWS_WITH_AS(runtime::validate_route_ids(ep, {0, 1, 2, 3, 4, 5, 6, 256}),
                       "topk_ids[0][7] = 256 is outside the allowed range [0, 256)", InvalidInput);
}
