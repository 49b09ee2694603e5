#include "codegen/builtin_kernels.hpp"

#include "codegen/mma_probe_kernel.hpp"
#include "codegen/sm_probe_kernel.hpp"
#include "codegen/smoke_kernel.hpp"
#include "codegen/tma_probe_kernel.hpp"

namespace moejit::codegen {
namespace {
bool every_target(Target) {
  return true;
}

KernelSpec smoke(Target t) {
  return smoke_kernel_spec(t);
}

constexpr BuiltinKernel k_kernels[] = {
    {"smoke", "MXFP4 -> BF16 dequantization (the smoke kernel)", smoke, every_target},
    {"tma-probe", "three TensorMaps by 2D bulk tensor copies (sm_90a+)", tma_probe_spec, every_target},
    {"mma-probe", "the block-scaled mma.sync.kind::mxf8f6f4 (sm_120a only)", mma_probe_spec, mma_probe_supports},
    {"sm-probe", "the SM each CTA ran on (%smid; SM partitions' GPU test) and the SM clock (the benches)",
     sm_probe_spec, every_target},
};
}  // namespace

std::span<const BuiltinKernel> builtin_kernels() {
  return k_kernels;
}

const BuiltinKernel* find_builtin_kernel(std::string_view name) {
  for (const BuiltinKernel& k : k_kernels)
    if (k.name == name) return &k;
  return nullptr;
}

std::string builtin_kernel_names() {
  std::string out;
  for (const BuiltinKernel& k : k_kernels) out += (out.empty() ? "" : ", ") + std::string(k.name);
  return out;
}

}  // namespace moejit::codegen
