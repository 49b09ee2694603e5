#pragma once
// The moejit pass pipeline (DESIGN "PTX passes", paper §5.1), in order:
// version, occupancy, tensormap-by-value, validate. Validate runs last so it
// checks what nvJitLink will assemble. Any change to what these passes
// write must bump k_pass_pipeline_version (pipeline_version.hpp).

#include <string>
#include <string_view>
#include <vector>

#include "ptx_passes/pass_manager.hpp"
#include "ptx_passes/pass_occupancy.hpp"
#include "ptx_passes/pass_tensormap_by_value.hpp"
#include "ptx_passes/pass_validate.hpp"
#include "ptx_passes/pass_version.hpp"

namespace moejit::ptx {

struct PipelineOptions {
  VersionPolicy version;
  std::vector<OccupancyRule> occupancy;
  std::vector<TensorMapFormal> tensormaps;
  std::vector<EntryAbi> abi;
};

PassManager make_pipeline(const PipelineOptions& options);
// The pass names, in order.
std::vector<std::string> pipeline_pass_names();

struct PipelineResult {
  std::vector<PassStage> stages;
  std::string final_ptx;
  double millis = 0;
};

// Parses `ptx` (named `buffer_name` in diagnostics) and runs the pipeline.
// Throws ParseError or PassError.
PipelineResult run_pipeline(std::string_view ptx, std::string_view buffer_name, const PipelineOptions& options);
// The same, appending each finished stage to `stages` as it completes (for
// callers that show the stages before a failure).
void run_pipeline(std::string_view ptx, std::string_view buffer_name, const PipelineOptions& options,
                  std::vector<PassStage>& stages);

}  // namespace moejit::ptx
