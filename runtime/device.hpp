#pragma once
// The live GPU: its properties, its primary context, and device memory.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/driver_api.hpp"

namespace moejit::runtime {

struct DeviceInfo {
  int ordinal = 0;
  std::string name;
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  int smem_per_sm = 0;           // bytes
  int smem_per_block_optin = 0;  // bytes, the most a block may request
  int regs_per_sm = 0;
  int max_threads_per_block = 0;
  int max_threads_per_sm = 0;
  int l2_bytes = 0;
  std::size_t total_memory = 0;
  int driver_version = 0;

  // The moejit target for this device ("sm_90a"), or "" if unsupported.
  std::string target_name() const;
};

int device_count();  // throws NoDriverError without a driver
// Throws codegen::ConfigError ("device") for an ordinal the machine lacks.
DeviceInfo query_device(int ordinal);

// Retains the device's primary context and makes it current on this thread.
class ScopedContext {
 public:
  explicit ScopedContext(int ordinal = 0);
  ~ScopedContext();
  ScopedContext(const ScopedContext&) = delete;
  ScopedContext& operator=(const ScopedContext&) = delete;
  CUcontext get() const { return ctx_; }

 private:
  CUdevice device_ = 0;
  CUcontext ctx_ = nullptr;
};

// What moejit's own device allocations (every DeviceBuffer) hold now, and the
// most they held at once since the last reset: the peak a layer's
// construction adds is measurable without a driver-side profiler.
struct DeviceMemoryStats {
  std::size_t live = 0;
  std::size_t peak = 0;
};
DeviceMemoryStats device_memory_stats();
void reset_device_memory_peak();  // peak := live

// Owning device allocation.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& o) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  CUdeviceptr ptr() const { return ptr_; }
  std::size_t bytes() const { return bytes_; }
  void upload(const void* host, std::size_t bytes);
  void download(void* host, std::size_t bytes) const;
  template <typename T>
  void upload(const std::vector<T>& v) {
    upload(v.data(), v.size() * sizeof(T));
  }
  template <typename T>
  void download(std::vector<T>& v) const {
    download(v.data(), v.size() * sizeof(T));
  }

 private:
  CUdeviceptr ptr_ = 0;
  std::size_t bytes_ = 0;
};

}  // namespace moejit::runtime
