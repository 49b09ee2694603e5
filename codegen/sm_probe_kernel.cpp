#include "codegen/sm_probe_kernel.hpp"

namespace moejit::codegen {

KernelSpec sm_probe_spec(Target target) {
  KernelSpec s;
  s.kernel = "sm_probe";
  s.template_file = "sm_probe.cuh";
  s.device_function = "moejit::sm_probe";
  s.target = target;
  s.constants = {{"kThreads", 32}};
  s.threads = 32;
  s.min_blocks_per_sm = 1;
  s.params = {
      {"out", ParamType::ptr, "moejit::u32* __restrict__"},
      {"spin_ns", ParamType::u32, "moejit::u32"},
      {"clock", ParamType::ptr, "moejit::u32* __restrict__"},
  };
  return s;
}

}  // namespace moejit::codegen
