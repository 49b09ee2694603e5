#pragma once
// The kernels moejit can build by name, without a model configuration: what
// `moejit inspect --kernel NAME` offers and what the PTX tests compile for
// every target. Adding a kernel is one row in builtin_kernels.cpp.

#include <span>
#include <string>
#include <string_view>

#include "codegen/kernel_spec.hpp"

namespace moejit::codegen {

struct BuiltinKernel {
  std::string_view name;  // "smoke", "tma-probe", "mma-probe", "sm-probe"
  std::string_view summary;
  KernelSpec (*spec)(Target target);
  bool (*supports)(Target target);  // whether the template compiles for the target
};

std::span<const BuiltinKernel> builtin_kernels();
const BuiltinKernel* find_builtin_kernel(std::string_view name);
std::string builtin_kernel_names();  // "smoke, tma-probe, mma-probe, sm-probe"

}  // namespace moejit::codegen
