// moejit run: the main job on a built-in model configuration. Plans the
// geometry, compiles every kernel the forward needs and, where a GPU exists,
// runs the layer on fresh random weights and inputs and checks it against the
// CPU references. Without a GPU the launch is skipped, and says so.
#include <fmt/format.h>

#include <fmt/ranges.h>

#include <random>

#include "codegen/device_profile.hpp"
#include "codegen/moe_config.hpp"
#include "codegen/moe_kernels.hpp"
#include "codegen/planner.hpp"
#include "jit/kernel_cache.hpp"
#include "oracle/moe_check.hpp"
#include "runtime/device.hpp"
#include "runtime/moe_layer.hpp"
#include "tools/cli_args.hpp"
#include "tools/codegen_flags.hpp"
#include "tools/commands.hpp"

namespace moejit::tools {

int cmd_run(int argc, char** argv) {
  std::vector<OptionSpec> options = {
      {"model", true, "built-in model: glm5.2 (default), dsv4.1-flash, gpt-oss-120b or gpt-oss-20b", "M"},
      {"batch", true, "tokens B in this forward, 1..256 (default 8)", "B"},
      {"target", true,
       "target to compile for (default: the GPU's, else sm_90a); sm_90a or sm_120a (the targets with a device profile)",
       "T"},
      {"seed", true, "random seed for weights and inputs (default: fresh each run)", "S"},
      {"help", false, "this text"},
  };
  options.push_back(shared_expert_option());
  for (OptionSpec& o : codegen_option_specs()) options.push_back(std::move(o));
  Args args(options, argc, argv, 2);
  if (args.has("help")) {
    fmt::print(
        "usage: moejit run [options]\n\n"
        "The main job: plan and compile the fused MoE layer of a built-in model for one batch size\n"
        "and, where a GPU exists, run it on random MXFP4 weights and MXFP8 inputs and report its\n"
        "error against the CPU references (quantized: cosine >= 0.99999 on every path,\n"
        "docs/numerics.md; unquantized: >= 0.97).\n"
        "Without a GPU the launch is skipped. The plan it prints is what launches (the same as\n"
        "`moejit plan --model M --ranks 1 --device <profile> --batch B`).\n\noptions:\n{}",
        format_options(options));
    return 0;
  }
  args.no_positional();  // `moejit run dsv4.1-flash` must not run the default model
  codegen::MoeConfig model = builtin_model_flag(args, args.get_or("model", "glm5.2"));
  const int tokens = static_cast<int>(args.get_int("batch", 8, 1, 256));
  const std::uint64_t seed =
      args.has("seed") ? static_cast<std::uint64_t>(args.get_int("seed", 0, 0, INT64_MAX)) : std::random_device{}();

  std::string why;
  const bool have_gpu = runtime::try_driver(&why) && runtime::device_count() > 0;
  std::optional<runtime::DeviceInfo> device;
  if (have_gpu) device = runtime::query_device(0);
  codegen::Target target{codegen::Arch::sm_90a};
  if (auto t = args.get("target")) {
    auto parsed = codegen::parse_target(*t);
    if (!parsed) throw UsageError(fmt::format("--target: '{}' is not one of {}", excerpt(*t), codegen::target_names()));
    target = *parsed;
  } else if (device && !device->target_name().empty()) {
    target = *codegen::parse_target(device->target_name());
  }
  // The live device's profile, else the built-in profile of the target.
  codegen::DeviceProfile profile;
  if (device && device->target_name() == std::string(target.name())) {
    profile = runtime::device_profile(*device);
  } else if (target.arch == codegen::Arch::sm_90a) {
    profile = codegen::builtin_profile("h200");
  } else if (target.arch == codegen::Arch::sm_120a) {
    profile = codegen::builtin_profile("rtx-pro-5000");
  } else {
    throw UsageError(fmt::format("--target: no built-in device profile for {} (use sm_90a or sm_120a)", target.name()));
  }

  runtime::MoeLayerOptions layer_options;
  layer_options.codegen = codegen_options(args);
  apply_recipe(args, model, layer_options.codegen);
  const codegen::MoeLaunchPlan plan = codegen::plan_launch(model, tokens, profile, layer_options.codegen);
  auto role = [](const codegen::RolePlan& r) {
    return r.launched ? fmt::format("{} x {} threads, {} B SMEM", r.grid, r.threads, r.smem_bytes)
                      : std::string("not launched");
  };
  fmt::print("[1/3] plan {} (E={}{}, k={}, H={}, I={}) B={} on {} ({}): {} path ({}), tile_n {}, {} stages\n",
             model.name, model.experts, model.shared_expert ? " + a fused shared expert" : "", model.top_k,
             model.hidden, model.intermediate, tokens, profile.name, target.name(),
             codegen::path_name(*plan.options.path), plan.atom, plan.tile_n, plan.stages);
  fmt::print("      dispatch {}\n      compute  {}, {} CTA(s)/SM, .maxnreg {}, schedule {}{}\n      finalize {}\n",
             role(plan.dispatch), role(plan.compute), plan.compute.blocks_per_sm, plan.compute.register_cap,
             codegen::schedule_name(plan.schedule),
             std::string(plan.paired_rows ? ", GEMM1 rows paired" : "") + (plan.token_frame ? ", token frame" : "") +
                 (plan.warp_tables ? ", routing tables by one warp" : ""),
             role(plan.finalize));
  fmt::print("[2/3] compile\n");
  for (const codegen::KernelSpec& spec : codegen::moe_kernel_specs(model, tokens, profile, layer_options.codegen)) {
    cache::Source source = cache::Source::compiled;
    const auto built = jit::KernelCache::global().get_or_build(spec, &source);
    const codegen::KernelResources* res = built->resources.find(spec.entry_name());
    fmt::print("      {:<22} NVRTC {:6.1f} ms  nvJitLink {:6.1f} ms  {:3} regs  {} B spills  ({})\n", spec.kernel,
               built->nvrtc_millis, built->link_millis, res ? res->registers : -1, res ? res->spill_store_bytes : -1,
               source == cache::Source::compiled ? "compiled" : "from the cache " + built->key.substr(0, 16));
  }
  if (!have_gpu) {
    fmt::print("[3/3] launch skipped: {}\n", why.empty() ? "no GPU visible" : "no CUDA driver found (" + why + ")");
    return 0;
  }
  if (device->target_name() != std::string(target.name()) || target.arch != codegen::Arch::sm_90a) {
    fmt::print("[3/3] launch skipped: GPU 0 is {} ({}); the layer runs on sm_90a and was compiled for {}\n",
               device->name, device->target_name(), target.name());
    return 0;
  }
  runtime::ScopedContext ctx(0);
  fmt::print("[3/3] run on {}: random weights (seed {}) ...\n", device->name, seed);
  const oracle::RandomWeights weights = oracle::random_weights(oracle::problem_of(model), seed, {}, model.biases);
  runtime::MoeLayer layer(model, weights.device(), layer_options);
  const oracle::MoeCheckResult r =
      oracle::check_forward(layer, weights, tokens, oracle::RoutingKind::uniform, seed + 1);
  fmt::print("      {}\n", r.summary());
  fmt::print(
      "      max |error| vs the quantized CPU reference: {:.6g}; cosine {:.8f} (>= {}), unquantized "
      "reference cosine {:.5f} (>= 0.97)\n",
      r.quantized.max_abs_error, r.quantized.cosine, r.cosine_bar, r.dense.cosine);
  if (!r.passed()) {
    fmt::print(stderr, "FAILED: {}\n", r.summary());
    return 1;
  }
  fmt::print("result: PASS\n");
  return 0;
}

}  // namespace moejit::tools
