#pragma once
// A cubin loaded with cuLibraryLoadData (context-independent), and its entry
// reached as a CUkernel.

#include <string>
#include <vector>

#include "runtime/driver_api.hpp"

namespace moejit::runtime {

struct LaunchDims {
  unsigned grid = 1;
  unsigned block = 1;
  unsigned dynamic_smem = 0;
};

class LoadedKernel {
 public:
  LoadedKernel(const std::vector<char>& cubin, const std::string& entry);
  ~LoadedKernel();
  LoadedKernel(const LoadedKernel&) = delete;
  LoadedKernel& operator=(const LoadedKernel&) = delete;

  CUkernel kernel() const { return kernel_; }
  const std::string& entry() const { return entry_; }

  // Launches on `stream` in the current context. `args` as for cuLaunchKernel.
  void launch(const LaunchDims& dims, CUstream stream, void** args) const;
  // Through cuLaunchKernelEx; `programmatic` sets programmatic stream
  // serialization (the kernel may start before the previous one on `stream`
  // completes, and must wait for it with griddepcontrol.wait).
  void launch_ex(const LaunchDims& dims, CUstream stream, void** args, bool programmatic) const;

 private:
  CUlibrary library_ = nullptr;
  CUkernel kernel_ = nullptr;
  std::string entry_;
};

}  // namespace moejit::runtime
