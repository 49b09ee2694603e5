#include "codegen/mma_probe_kernel.hpp"

namespace moejit::codegen {

bool mma_probe_supports(Target target) {
  return target.arch == Arch::sm_120a;
}

KernelSpec mma_probe_spec(Target target) {
  KernelSpec s;
  s.kernel = "mma_probe";
  s.template_file = "mma_probe.cuh";
  s.device_function = "moejit::mma_probe";
  s.target = target;
  s.constants = {{"kBlocks", k_mma_probe_blocks}};
  s.threads = 32;
  s.min_blocks_per_sm = 1;
  s.params = {
      {"a", ParamType::ptr, "const moejit::u32* __restrict__"},
      {"b", ParamType::ptr, "const moejit::u32* __restrict__"},
      {"sfa", ParamType::ptr, "const moejit::u32* __restrict__"},
      {"sfb", ParamType::ptr, "const moejit::u32* __restrict__"},
      {"d", ParamType::ptr, "float* __restrict__"},
  };
  s.required_instructions = {k_block_scaled_mma};
  return s;
}

}  // namespace moejit::codegen
