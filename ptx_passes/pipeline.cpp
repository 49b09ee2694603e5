#include "ptx_passes/pipeline.hpp"

#include <chrono>

namespace moejit::ptx {

PassManager make_pipeline(const PipelineOptions& options) {
  PassManager pm;
  pm.add(std::make_unique<VersionPass>(options.version));
  pm.add(std::make_unique<OccupancyPass>(options.occupancy));
  pm.add(std::make_unique<TensorMapByValuePass>(options.tensormaps));
  pm.add(std::make_unique<ValidatePass>(options.abi));
  return pm;
}

std::vector<std::string> pipeline_pass_names() {
  return make_pipeline(PipelineOptions{}).names();
}

void run_pipeline(std::string_view ptx, std::string_view buffer_name, const PipelineOptions& options,
                  std::vector<PassStage>& stages) {
  Module m = Module::parse(ptx, buffer_name);
  make_pipeline(options).run(m, stages);
}

PipelineResult run_pipeline(std::string_view ptx, std::string_view buffer_name, const PipelineOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  PipelineResult out;
  run_pipeline(ptx, buffer_name, options, out.stages);
  out.final_ptx = out.stages.empty() ? std::string(ptx) : out.stages.back().ptx;
  out.millis = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return out;
}

}  // namespace moejit::ptx
