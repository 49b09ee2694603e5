// moejit plan: the geometry the planner picks for a model on a device, for
// one batch size or a sweep, as a table shaped like the paper's Table 2 or
// as JSON. Needs no GPU.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "codegen/planner.hpp"
#include "tools/batch_list.hpp"
#include "tools/cli_args.hpp"
#include "tools/codegen_flags.hpp"
#include "tools/commands.hpp"
#include "tools/plan_table.hpp"

namespace moejit::tools {
namespace {
constexpr int k_max_ranks = 32;
constexpr int k_max_token_capacity = 4096;

codegen::MoeConfig read_config(const Args& args) {
  if (args.has("model") == args.has("config"))
    throw UsageError("give exactly one of --model NAME or --config FILE (see --help)");
  codegen::MoeConfig config;
  if (auto name = args.get("model")) {
    config = builtin_model_flag(args, *name);
    if (!args.has("ranks"))
      throw UsageError(fmt::format("--ranks R is required with --model (1 <= R <= {})", k_max_ranks));
  } else {
    config = codegen::load_moe_config(*args.get("config"));
    if (args.has("shared-expert") && !config.shared_expert)
      throw UsageError(fmt::format(
          "--shared-expert: {} defines no shared expert; add \"shared_expert\": {{\"k_group\": 32}} (or 128) to it",
          excerpt(*args.get("config"))));
  }
  config.ranks = static_cast<int>(args.get_int("ranks", config.ranks, 1, k_max_ranks));
  config.token_capacity =
      static_cast<int>(args.get_int("token-capacity", config.token_capacity, 1, k_max_token_capacity));
  if (args.has("no-batched-routes")) config.batched_routes = false;
  return config;
}

codegen::DeviceProfile read_device(const Args& args) {
  auto name = args.get("device");
  if (!name)
    throw UsageError(fmt::format("--device is required: one of {}", fmt::join(codegen::builtin_profile_names(), ", ")));
  try {
    return codegen::builtin_profile(*name);
  } catch (const std::invalid_argument&) {
    throw UsageError(fmt::format("--device: '{}' is not one of {}", excerpt(*name),
                                 fmt::join(codegen::builtin_profile_names(), ", ")));
  }
}
}  // namespace

int cmd_plan(int argc, char** argv) {
  std::vector<OptionSpec> options = {
      {"model", true,
       "built-in model: glm5.2 (H=6144 I=2048 E=256 k=8), dsv4.1-flash (H=5120 I=2304 E=384 k=6), "
       "gpt-oss-120b (H=I=2880 E=128 k=4) or gpt-oss-20b (E=32)",
       "NAME"},
      {"config", true, "model configuration from a JSON file instead of --model (keys below)", "FILE"},
      {"ranks", true, "expert-parallel ranks R, 1..32; E must be a multiple of R (required with --model)", "R"},
      {"batch", true, "one batch size: tokens per rank, 1..token capacity", "B"},
      {"batches", true, "batch sizes: a list (1,3,8), a range of powers of two (1-256 = 1,2,4,...,256), or both",
       "LIST"},
      {"device", true,
       "device profile: h200 (sm_90a), h100 (sm_90a, SXM5: the H200's SMs, so its plans) or rtx-pro-5000 (sm_120a)",
       "NAME"},
      {"shared-expert", false,
       "fuse the model's shared expert (glm5.2, dsv4.1-flash); Table 2's model takes its FP8 K-group (128 for "
       "glm5.2, 32 for dsv4.1-flash), the layer its MXFP4 weights as expert E"},
      {"token-capacity", true, "tokens per rank the workspace holds, Bcap, 1..4096 (default 256)", "N"},
      {"no-batched-routes", false, "plan for a workspace without the batched route arrays (no batched returns)"},
      {"json", false, "print the configuration, the device and every geometry as JSON"},
      {"explain", false, "list every decision with its reason (the default for a single batch)"},
      {"help", false, "this text"},
  };
  for (OptionSpec& o : codegen_option_specs()) options.push_back(std::move(o));
  Args args(options, argc, argv, 2);
  if (args.has("help")) {
    fmt::print(
        "usage: moejit plan (--model NAME --ranks R | --config FILE [--ranks R])\n"
        "                   (--batch B | --batches LIST) --device NAME [options]\n\n"
        "Prints, one column per batch size, first the launch plan: the compute path and atom,\n"
        "token tile, pipeline depth and every role's grid, threads, SMEM and register cap, exactly\n"
        "what MoeLayer launches (per rank of R). Then the GC-MoE paper's section 4.4 decision chain\n"
        "in the shape of its Table 2 (expert-parallel rule set: handoff, return staging, pull cache,\n"
        "reserved CTAs, the role-2 SMEM model); sm_120a follows the paper exactly, sm_90a's\n"
        "differences are in codegen/planner_sm90a.md. A shape that cannot run is reported as\n"
        "rejected, with the reason (exit status 1). Needs no GPU.\n\n"
        "example: moejit plan --model glm5.2 --ranks 8 --batches 1-256 --device rtx-pro-5000\n\n"
        "options:\n{}\n"
        "config file (JSON): experts, top_k, hidden and intermediate are required; ranks defaults\n"
        "to 1 (--ranks overrides it), name to the file's name, the others to the values shown:\n"
        "  {{\"experts\": 256, \"top_k\": 8, \"hidden\": 6144, \"intermediate\": 2048, \"ranks\": 8,\n"
        "   \"name\": \"glm5.2\", \"recipe\": \"w4a8-mx\" (or \"w4a16\"), \"swiglu_clamp\": 10.0 (or null),\n"
        "   \"activation\": \"swiglu\" (or \"gpt-oss\"), \"alpha\": 1.702, \"gate_up\": \"halves\" (or "
        "\"interleaved\"),\n"
        "   \"biases\": false, \"shared_expert\": {{\"k_group\": 128}} (or null), \"dispatch_sms\": 6,\n"
        "   \"token_capacity\": 256, \"batched_routes\": true}}\n"
        "hidden and intermediate: any multiple of 32 (H 512..8192, I 256..4096).\n",
        format_options(options));
    return 0;
  }
  args.no_positional();
  const codegen::DeviceProfile device = read_device(args);
  codegen::MoeConfig config = read_config(args);
  // The paper's partition (eq. 5) needs two SMs or more; the launch plan's split takes any (codegen_options).
  if (args.has("dispatch-sms"))
    config.dispatch_sms =  // at least one SM left for the compute role, as the launch plan's split needs
        static_cast<int>(args.get_int("dispatch-sms", config.dispatch_sms, 2, device.sm_count - 1));
  validate_with_ranks(args, config);

  if (args.has("batch") == args.has("batches"))
    throw UsageError("give exactly one of --batch B or --batches LIST (see --help)");
  const std::vector<int> batches =
      args.has("batch") ? std::vector<int>{static_cast<int>(args.get_int("batch", 1, 1, config.token_capacity))}
                        : parse_batch_list("batches", *args.get("batches"), 1, config.token_capacity);

  std::vector<PlanOutcome> plans;
  bool all_planned = true;
  codegen::MoeCodegenOptions codegen_opts = codegen_options(args);
  apply_recipe(args, config, codegen_opts);
  for (int b : batches) {
    PlanOutcome o{b, std::nullopt, "", std::nullopt, ""};
    try {
      o.geometry = codegen::plan(config, b, device);
    } catch (const codegen::PlanError& e) {
      o.rejection = e.what();
      all_planned = false;
    }
    // A ConfigError here is an option this B cannot run (--schedule units at B = 8): its column, like a PlanError.
    const auto reject_launch = [&](const std::exception& e) {
      o.launch_rejection = e.what();
      all_planned = false;
    };
    try {
      o.launch = codegen::plan_launch(config, b, device, codegen_opts);
    } catch (const codegen::PlanError& e) {
      reject_launch(e);
    } catch (const codegen::ConfigError& e) {
      reject_launch(e);
    }
    plans.push_back(std::move(o));
  }
  if (args.has("json"))
    fmt::print("{}\n", plan_report_json(config, device, plans).dump(2));
  else
    fmt::print("{}", render_plan_table(config, device, plans, args.has("explain") || batches.size() == 1));
  return all_planned ? 0 : 1;
}

}  // namespace moejit::tools
