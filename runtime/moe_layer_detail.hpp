#pragma once
// What moe_layer.cpp and moe_layer_weights.cpp share; not part of the API.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "codegen/kernel_spec.hpp"
#include "runtime/driver_api.hpp"
#include "runtime/loaded_kernel.hpp"

namespace moejit::runtime::detail {

struct Loaded {
  std::unique_ptr<LoadedKernel> kernel;
  std::string key;
};

// Through the kernel cache: a spec seen before costs a hash-map lookup, a new
// one a disk hit or a build that is then published for every later process.
Loaded load(const codegen::KernelSpec& spec);

// InvalidInput naming `field` unless `ptr` is device memory with `bytes` bytes from it on (`what` they hold).
void require_device_bytes(const char* field, const std::string& shown, CUdeviceptr ptr, std::uint64_t bytes,
                          std::string_view what);

}  // namespace moejit::runtime::detail
