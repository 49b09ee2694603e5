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

namespace moejit::tools {

struct PrecompileRequest {
  std::optional<std::string> model;        // --model: a built-in configuration
  std::optional<std::string> config_file;  // --config: a configuration file (JSON)
  int ranks = 1;
  std::vector<int> batches;  // tokens per rank
  std::vector<codegen::Target> targets;
};

// The built-in configurations --model accepts (the design's reference shapes).
const std::vector<std::string>& known_models();

// "1-256", "1,2,4,8", "1-8,16,32": sorted, distinct. Throws UsageError.
std::vector<int> parse_batches(std::string_view text);
// "sm_90a,sm_120a". Throws UsageError naming an unknown target.
std::vector<codegen::Target> parse_targets(std::string_view text);

// Every distinct kernel the request can need, in first-seen order.
std::vector<codegen::KernelSpec> kernels_to_precompile(const PrecompileRequest& request);

}  // namespace moejit::tools
