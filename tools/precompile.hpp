#pragma once
// What `moejit precompile` compiles: a request (model or config file, ranks,
// batch range, targets) becomes the exact set of distinct KernelSpecs its
// MoE layer can need, as the planner plans each shape. Batch sizes that share
// a kernel yield it once.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "codegen/device_profile.hpp"
#include "codegen/kernel_spec.hpp"
#include "codegen/moe_config.hpp"
#include "codegen/moe_launch_plan.hpp"
#include "codegen/target.hpp"

namespace moejit::tools {

struct PrecompileRequest {
  // The model (--model or --config, --ranks applied); absent: precompile what
  // codegen emits without a configuration (the smoke kernel).
  std::optional<codegen::MoeConfig> config;
  std::vector<int> batches;  // tokens per rank
  std::vector<codegen::Target> targets;
  codegen::MoeCodegenOptions options;  // the layer options that change kernels (--path, --input-bf16, ...)
};

// "1-256", "1,2,4,8", "1-8,16,32": every batch size named, sorted, distinct (a
// range is all of its sizes: a server meets any B). Throws UsageError.
std::vector<int> parse_batches(std::string_view text);
// "sm_90a,sm_120a". Throws UsageError naming an unknown target.
std::vector<codegen::Target> parse_targets(std::string_view text);

// The built-in device profile the planner assumes for `target` on a machine
// without that GPU (h200 for sm_90a, rtx-pro-5000 for sm_120a). Throws
// UsageError for a target without one.
codegen::DeviceProfile profile_for(codegen::Target target);

// Every distinct kernel the request can need, in first-seen order. Throws
// codegen::ConfigError for a batch beyond the token capacity, and
// std::runtime_error naming the batch, profile and reason for a shape the
// planner rejects (it would never run, so nothing can be precompiled for it).
std::vector<codegen::KernelSpec> kernels_to_precompile(const PrecompileRequest& request);

}  // namespace moejit::tools
