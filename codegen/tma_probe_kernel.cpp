#include "codegen/tma_probe_kernel.hpp"

namespace moejit::codegen {

KernelSpec tma_probe_spec(Target target) {
  KernelSpec s;
  s.kernel = "tma_probe";
  s.template_file = "tma_probe.cuh";
  s.device_function = "moejit::tma_probe";
  s.target = target;
  s.constants = {{"kBoxCols", k_tma_probe_box_cols}, {"kBoxRows", k_tma_probe_box_rows}};
  s.threads = 128;
  s.min_blocks_per_sm = 1;
  s.params = {
      {"map_a", ParamType::tensormap, "const void*", k_tma_probe_map_uses},
      {"map_b", ParamType::tensormap, "const void*", k_tma_probe_map_uses},
      {"map_c", ParamType::tensormap, "const void*", k_tma_probe_map_uses},
      {"out", ParamType::ptr, "moejit::u8* __restrict__"},
      {"tile_x", ParamType::u32, "moejit::u32"},
      {"tile_y", ParamType::u32, "moejit::u32"},
  };
  return s;
}

}  // namespace moejit::codegen
