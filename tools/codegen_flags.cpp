#include "tools/codegen_flags.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <optional>
#include <string>

#include "templates/moe_contract.cuh"

namespace moejit::tools {

std::vector<OptionSpec> codegen_option_specs() {
  return {
      {"path", true,
       "compute path: fast (the default: sm_90a E4M3 wgmma on split rows, FP32 scaling per K32; sm_120a "
       "block-scaled MMA) or exact (sm_90a: BF16 products; the only path of W4A16); docs/numerics.md",
       "P"},
      {"input-bf16", false, "x arrives as BF16 and the dispatch role quantizes it to MXFP8"},
      {"recipe", true,
       "the model's recipe: w4a8-mx (MXFP8 activations and intermediate) or w4a16 (BF16 activations "
       "straight into GEMM1, BF16 intermediate; implies --input-bf16); default: the model's",
       "R"},
      {"tile-n", true, "token tile override: 8, 16, 32 or 64 (default: planned)", "N"},
      {"stages", true, "compute pipeline depth override, 2..16 (default: planned)", "S"},
      {"ctas-per-sm", true, "compute CTAs per SM override, 1..8 (default: planned)", "C"},
      {"consumer-groups", true,
       "consumer warpgroups of the compute CTA, 1..3, each on the atom's tiles per warpgroup (default: planned, "
       "3 for the fast atom on one GPU; with the unit schedule 2, a pair of tiles each, or 3, step owners)",
       "G"},
      {"schedule", true,
       "the compute role's schedule: stream (each phase's K128 steps split evenly over the CTAs), units "
       "(small B, the fast path on one GPU: whole (expert, 128 intermediate columns) units, no CTA waits for "
       "another; finalize adds their partial rows) or items (small B, sm_90a's exact path on one GPU: whole items "
       "dealt round-robin, none cut); default: planned (units at B = 1, and at B = 2 where whole units balance the "
       "grid, on sm_90a's fast path; items at B = 1 on its exact path under W4A8)",
       "S"},
      {"paired-rows", true,
       "on or off: GEMM1's split rows of a token side by side in one 8-column wgmma, in the segments of at most 4 "
       "rows (default: planned, on at B <= 64: 8-column token tiles at B <= 8; the fast path on one GPU)",
       "V"},
      {"token-frame", true,
       "on or off: GEMM1's rows in one scale frame per token (each block's E4M3 codes shifted to the token's largest "
       "scale by the dispatch role), so the GEMM1 promotion multiplies by the weight scale alone (default: planned, "
       "on from B = 9 for the fast path on one GPU where the weights' scale codes allow; docs/numerics.md)",
       "V"},
      {"warp-tables", true,
       "on or off: the compute CTA's routing tables built by one warp, a lane a route, instead of by the whole "
       "block (default: planned, on at B <= 4 on one GPU where B k, plus one for a shared expert, is at most 32; on "
       "where the routes are more, or across ranks, is refused)",
       "V"},
      {"activation-warps", true,
       "the compute CTA's activation producer warps, 1..4, taking turns by K128 step (default: planned, one plus "
       "the warps the CTA leaves free on the schedulers)",
       "W"},
      {"decoded-scales", false,
       "a decoder warp turns the fast path's UE8M0 scale words into FP32 for the consumers (default: off; "
       "measured 2-6 points of the floor slower on the H200)"},
      {"ep-mode", true,
       "expert parallelism's modes (R > 1), overriding the plan: none, or a +-joined list of mirror, pull, "
       "staged-returns, direct-scan (default: planned; docs/expert-parallelism.md)",
       "M"},
      {"dispatch-sms", true,
       "SMs kept out of the compute grid for the dispatch role (R > 1; default: none, or MOEJIT_DISPATCH_SMS); "
       "`moejit plan` also gives it to the paper's partition (eq. 5, >= 2; default 6)",
       "N"},
      {"subnormal-weight-scales", false,
       "the kernels for weights with UE8M0 code-0 blocks holding nonzero values (a layer picks this itself from "
       "its weights; default: the kernels for weights without them)"},
  };
}

void validate_with_ranks(const Args& args, const codegen::MoeConfig& config) {
  try {
    codegen::validate(config);
  } catch (const codegen::ConfigError& e) {
    if (args.has("ranks") && (e.field() == "experts" || e.field() == "ranks"))
      throw UsageError(fmt::format("--ranks: {}", e.what()));
    throw;
  }
}

codegen::MoeCodegenOptions codegen_options(const Args& args) {
  codegen::MoeCodegenOptions o;
  if (auto p = args.get("path")) {
    const auto parsed = codegen::parse_path(*p);
    if (!parsed) throw UsageError(fmt::format("--path: '{}' is not one of fast, exact", excerpt(*p)));
    o.path = *parsed;
  }
  o.input_bf16 = args.has("input-bf16");
  // A flag's range is its help's: 0 ("as planned") is the flag left out, not a value to give.
  o.tile_n = static_cast<int>(args.get_int("tile-n", 0, 8, 64));
  o.stages = static_cast<int>(args.get_int("stages", 0, 2, 16));
  o.ctas_per_sm = static_cast<int>(args.get_int("ctas-per-sm", 0, 1, 8));
  o.consumer_groups = static_cast<int>(args.get_int("consumer-groups", 0, 1, contract::kMaxGroups));
  if (auto s = args.get("schedule")) {
    const auto parsed = codegen::parse_schedule(*s);
    if (!parsed) throw UsageError(fmt::format("--schedule: '{}' is not one of stream, units, items", excerpt(*s)));
    o.schedule = *parsed;
  }
  // An on|off flag: unset where left out (as planned).
  auto on_off = [&](const char* name) -> std::optional<bool> {
    const auto v = args.get(name);
    if (!v) return std::nullopt;
    if (*v != "on" && *v != "off") throw UsageError(fmt::format("--{}: '{}' is not one of on, off", name, excerpt(*v)));
    return *v == "on";
  };
  o.paired_rows = on_off("paired-rows");
  o.token_frame = on_off("token-frame");
  o.warp_tables = on_off("warp-tables");
  o.activation_warps = static_cast<int>(args.get_int("activation-warps", 0, 1, contract::kMaxActivationWarps));
  o.decoded_scales = args.has("decoded-scales");
  o.subnormal_weight_scales = args.has("subnormal-weight-scales");
  if (auto m = args.get("ep-mode")) {
    const auto mode = codegen::parse_ep_mode(*m);
    if (!mode)
      throw UsageError(
          fmt::format("--ep-mode: '{}' is not none or a +-joined list of mirror, pull, staged-returns, "
                      "direct-scan",
                      excerpt(*m)));
    o.ep_mode = *mode;
  }
  if (args.has("dispatch-sms")) o.dispatch_sms = static_cast<int>(args.get_int("dispatch-sms", 0, 0, 4096));
  try {
    codegen::validate(o);
  } catch (const codegen::ConfigError& e) {
    // Each option's flag is its field's name with hyphens (codegen_option_specs).
    std::string flag(e.field());
    std::replace(flag.begin(), flag.end(), '_', '-');
    throw UsageError(fmt::format("--{}: {}", flag, e.what()));
  }
  return o;
}

void apply_recipe(const Args& args, codegen::MoeConfig& config, codegen::MoeCodegenOptions& options) {
  if (auto r = args.get("recipe")) {
    const auto recipe = codegen::parse_recipe(*r);
    if (!recipe)
      throw UsageError(fmt::format("--recipe: '{}' is not one of {}", excerpt(*r),
                                   codegen::names_of(codegen::k_recipes, codegen::recipe_name, "", ", ")));
    config.recipe = *recipe;
  }
  if (config.recipe == codegen::Recipe::w4a16) options.input_bf16 = true;
}

OptionSpec shared_expert_option() {
  return {"shared-expert", false,
          "fuse the model's shared expert (glm5.2, dsv4.1-flash): expert E of the weights, in MXFP4, every token "
          "with weight 1"};
}

codegen::MoeConfig builtin_model_flag(const Args& args, std::string_view name) {
  const bool shared = args.has("shared-expert");
  const std::vector<std::string> names = codegen::builtin_model_names();
  if (std::find(names.begin(), names.end(), name) == names.end())
    throw UsageError(fmt::format("--model: '{}' is not one of {}", excerpt(name), fmt::join(names, ", ")));
  try {
    return codegen::builtin_model(name, shared);
  } catch (const std::invalid_argument&) {
    throw UsageError(
        fmt::format("--shared-expert: model '{}' has no shared expert (glm5.2 and dsv4.1-flash have one)", name));
  }
}

}  // namespace moejit::tools
