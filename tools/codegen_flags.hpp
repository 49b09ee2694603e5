#pragma once
// The codegen options as command-line flags, one definition for every
// command that plans kernels (run, plan, precompile, inspect): a flag that
// changes what a layer compiles changes what these commands show and cache.

#include <vector>

#include "codegen/moe_launch_plan.hpp"
#include "tools/cli_args.hpp"

namespace moejit::tools {

std::vector<OptionSpec> codegen_option_specs();
// Throws UsageError naming the flag, its value and the allowed values.
codegen::MoeCodegenOptions codegen_options(const Args& args);
// --recipe R overrides the model's recipe; a W4A16 model takes BF16 x, so it
// sets input_bf16 (its only input format) whether the recipe came from the
// flag or the config file.
void apply_recipe(const Args& args, codegen::MoeConfig& config, codegen::MoeCodegenOptions& options);

// The built-in model `name`, with its shared expert fused if the command has
// --shared-expert (shared_expert_option()); UsageError for an unknown name or
// a model without a shared expert.
OptionSpec shared_expert_option();
// codegen::validate(config), where a failure that --ranks caused (E not a multiple of R) is a UsageError naming
// --ranks: the option is what the user should change.
void validate_with_ranks(const Args& args, const codegen::MoeConfig& config);
codegen::MoeConfig builtin_model_flag(const Args& args, std::string_view name);

}  // namespace moejit::tools
