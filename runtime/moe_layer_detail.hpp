#pragma once
// What the layer's files share (moe_layer.cpp, its kernels in
// moe_layer_kernels.cpp, its checks against the driver in
// moe_layer_checks.cpp, moe_layer_weights.cpp) and ep_ranks.cpp reads; not
// part of the API.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "codegen/kernel_spec.hpp"
#include "runtime/driver_api.hpp"
#include "runtime/loaded_kernel.hpp"
#include "runtime/moe_layer.hpp"

namespace moejit::runtime::detail {

struct Loaded {
  std::unique_ptr<LoadedKernel> kernel;
  std::string key;
};

// Through the kernel cache: a spec seen before costs a hash-map lookup, a new
// one a disk hit or a build that is then published for every later process.
Loaded load(const codegen::KernelSpec& spec);

// What cuMemGetAddressRange and cuPointerGetAttribute return for a pointer that is not device memory (anything
// else but success: the driver could not tell).
bool not_device_memory(CUresult r);

// The device memory from `ptr` on, up to `want` bytes: cuMemGetAddressRange answers for one mapped region, and a
// virtual-memory reservation (PyTorch's expandable segments) maps one tensor over many regions back to back. The
// walk stays in `ptr`'s reservation (`reservation` is cuPointerGetAttribute, asked for RANGE_START_ADDR), so an
// allocation that merely follows another never counts. 0 when `ptr` is not device memory, with its CUresult in
// *error: INVALID_VALUE or NOT_FOUND for a pointer that is not (not_device_memory), anything else for a driver that
// could not tell, there or at any step of the walk.
std::uint64_t device_bytes_from(CUdeviceptr ptr, std::uint64_t want, PFN_cuMemGetAddressRange_v3020 range,
                                PFN_cuPointerGetAttribute_v4000 reservation, CUresult* error);

// device_bytes_from through the loaded driver: nullopt when `ptr` is not device memory, a DriverError where the
// driver could not tell.
std::optional<std::uint64_t> device_bytes(CUdeviceptr ptr, std::uint64_t want);

// InvalidInput naming `field` unless `ptr` is device memory with `bytes` bytes from it on (`what` they hold); a
// DriverError where the driver could not tell.
void require_device_bytes(const char* field, const std::string& shown, CUdeviceptr ptr, std::uint64_t bytes,
                          std::string_view what);

}  // namespace moejit::runtime::detail

namespace moejit::runtime {

// Complete here: moe_layer.cpp destroys the layer's kernels_ (~MoeLayer, and the setup constructor when it
// throws), which needs the whole type, and moe_layer_kernels.cpp fills them.
struct MoeLayer::RoleKernels {
  std::vector<codegen::KernelSpec> specs;  // launch order: [dispatch,] compute, finalize
  std::vector<std::unique_ptr<LoadedKernel>> kernels;
  std::vector<std::string> keys;  // kernel cache keys: the cubins' identity
};

}  // namespace moejit::runtime
