#include "runtime/loaded_kernel.hpp"

namespace moejit::runtime {

LoadedKernel::LoadedKernel(const std::vector<char>& cubin, const std::string& entry) : entry_(entry) {
  MOEJIT_CU(cuLibraryLoadData, &library_, cubin.data(), nullptr, nullptr, 0, nullptr, nullptr, 0);
  try {
    MOEJIT_CU(cuLibraryGetKernel, &kernel_, library_, entry.c_str());
    // Loaded into the current context now, not lazily at its first launch: loading may wait for the device,
    // and with expert parallelism on one GPU another rank's grid may be spinning there until this one runs.
    CUfunction fn = nullptr;
    MOEJIT_CU(cuKernelGetFunction, &fn, kernel_);
  } catch (...) {
    driver().cuLibraryUnload(library_);
    throw;
  }
}

LoadedKernel::~LoadedKernel() {
  if (library_) driver().cuLibraryUnload(library_);
}

void LoadedKernel::launch(const LaunchDims& dims, CUstream stream, void** args) const {
  CUfunction fn = nullptr;
  MOEJIT_CU(cuKernelGetFunction, &fn, kernel_);
  MOEJIT_CU(cuLaunchKernel, fn, dims.grid, 1, 1, dims.block, 1, 1, dims.dynamic_smem, stream, args, nullptr);
}

void LoadedKernel::launch_ex(const LaunchDims& dims, CUstream stream, void** args, bool programmatic) const {
  CUfunction fn = nullptr;
  MOEJIT_CU(cuKernelGetFunction, &fn, kernel_);
  CUlaunchAttribute attr{};
  attr.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
  attr.value.programmaticStreamSerializationAllowed = 1;
  CUlaunchConfig config{};
  config.gridDimX = dims.grid;
  config.gridDimY = config.gridDimZ = 1;
  config.blockDimX = dims.block;
  config.blockDimY = config.blockDimZ = 1;
  config.sharedMemBytes = dims.dynamic_smem;
  config.hStream = stream;
  config.attrs = programmatic ? &attr : nullptr;
  config.numAttrs = programmatic ? 1 : 0;
  MOEJIT_CU(cuLaunchKernelEx, &config, fn, args, nullptr);
}

}  // namespace moejit::runtime
