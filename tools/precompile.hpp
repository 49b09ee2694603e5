#pragma once
// What `moejit precompile` compiles: a request (model or config file, ranks,
// batch range, targets) becomes the exact set of distinct KernelSpecs it can
// need. Batch sizes that share a kernel yield it once.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "codegen/kernel_spec.hpp"
#include "codegen/target.hpp"
#include "runtime/moe_reference.hpp"

namespace moejit::tools {

struct PrecompileRequest {
  std::string source;  // "model glm5.2", "config FILE", or "" (every kernel codegen emits)
  // The MoE configuration of the model or config file (all experts, before
  // --ranks divides them); absent: precompile what codegen emits on its own.
  std::optional<reference::MoeProblem> problem;
  int ranks = 1;
  std::vector<int> batches;  // tokens per rank
  std::vector<codegen::Target> targets;
};

// A configuration file: {"experts": E, "top_k": k, "hidden": H, "intermediate": I, "clamp": c}.
// Throws UsageError naming the file and the bad or missing field.
reference::MoeProblem read_config_file(const std::string& path);

// SMEM per SM of the device profile the planner assumes for `target` when no
// GPU is present: h200 (sm_90a), b200 (sm_100a), rtx-pro-5000 (sm_120a).
int profile_smem_per_sm(codegen::Target target);

// "1-256", "1,2,4,8", "1-8,16,32": sorted, distinct. Throws UsageError.
std::vector<int> parse_batches(std::string_view text);
// "sm_90a,sm_120a". Throws UsageError naming an unknown target.
std::vector<codegen::Target> parse_targets(std::string_view text);

// Every distinct kernel the request can need, in first-seen order. Throws
// UsageError for a configuration the layer refuses (naming the field).
std::vector<codegen::KernelSpec> kernels_to_precompile(const PrecompileRequest& request);

}  // namespace moejit::tools
