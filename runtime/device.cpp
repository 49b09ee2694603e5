#include "runtime/device.hpp"

#include <fmt/format.h>

#include <atomic>
#include <utility>

#include "codegen/moe_config.hpp"

namespace moejit::runtime {

namespace {
std::atomic<std::size_t> g_live{0}, g_peak{0};

void count_alloc(std::size_t bytes) {
  const std::size_t live = g_live.fetch_add(bytes) + bytes;
  std::size_t peak = g_peak.load();
  while (live > peak && !g_peak.compare_exchange_weak(peak, live)) {
  }
}
}  // namespace

DeviceMemoryStats device_memory_stats() {
  return {g_live.load(), g_peak.load()};
}
void reset_device_memory_peak() {
  g_peak.store(g_live.load());
}

std::string DeviceInfo::target_name() const {
  const int cc = cc_major * 10 + cc_minor;
  if (cc == 90) return "sm_90a";
  if (cc == 100) return "sm_100a";
  if (cc == 120) return "sm_120a";
  return "";
}

int device_count() {
  int n = 0;
  MOEJIT_CU(cuDeviceGetCount, &n);
  return n;
}

DeviceInfo query_device(int ordinal) {
  const DriverApi& api = driver();
  const int count = device_count();
  if (ordinal < 0 || ordinal >= count)
    throw codegen::ConfigError("device", fmt::format("device = {} is outside the allowed range [0, {}] ({} GPU(s))",
                                                     ordinal, count - 1, count));
  CUdevice dev = 0;
  MOEJIT_CU(cuDeviceGet, &dev, ordinal);
  DeviceInfo info;
  info.ordinal = ordinal;
  char name[256] = {};
  MOEJIT_CU(cuDeviceGetName, name, sizeof(name), dev);
  info.name = name;
  auto attr = [&](CUdevice_attribute a) {
    int v = 0;
    MOEJIT_CU(cuDeviceGetAttribute, &v, a, dev);
    return v;
  };
  info.cc_major = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  info.cc_minor = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  info.sm_count = attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  info.smem_per_sm = attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR);
  info.smem_per_block_optin = attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
  info.regs_per_sm = attr(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR);
  info.max_threads_per_block = attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
  info.max_threads_per_sm = attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR);
  info.l2_bytes = attr(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE);
  MOEJIT_CU(cuDeviceTotalMem, &info.total_memory, dev);
  info.driver_version = api.driver_version;
  return info;
}

ScopedContext::ScopedContext(int ordinal) {
  MOEJIT_CU(cuDeviceGet, &device_, ordinal);
  MOEJIT_CU(cuDevicePrimaryCtxRetain, &ctx_, device_);
  if (const CUresult r = driver().cuCtxSetCurrent(ctx_); r != CUDA_SUCCESS) {
    driver().cuDevicePrimaryCtxRelease(device_);  // the destructor does not run for a constructor that throws
    check_cu(r, "cuCtxSetCurrent");
  }
}

ScopedContext::~ScopedContext() {
  if (ctx_) driver().cuDevicePrimaryCtxRelease(device_);
}

DeviceBuffer::DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
  if (bytes) {
    // The size in the error: an out-of-memory on multi-GB packed weights said only CUDA_ERROR_OUT_OF_MEMORY.
    if (const CUresult r = driver().cuMemAlloc(&ptr_, bytes); r != CUDA_SUCCESS)
      check_cu(r, fmt::format("cuMemAlloc of {} B", bytes).c_str());
    count_alloc(bytes);
  }
}

DeviceBuffer::~DeviceBuffer() {
  if (ptr_) {
    driver().cuMemFree(ptr_);
    g_live -= bytes_;
  }
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& o) noexcept
    : ptr_(std::exchange(o.ptr_, 0)), bytes_(std::exchange(o.bytes_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    if (ptr_) {
      driver().cuMemFree(ptr_);
      g_live -= bytes_;
    }
    ptr_ = std::exchange(o.ptr_, 0);
    bytes_ = std::exchange(o.bytes_, 0);
  }
  return *this;
}

void DeviceBuffer::upload(const void* host, std::size_t bytes) {
  if (bytes > bytes_) throw std::out_of_range(fmt::format("upload of {} bytes into a {}-byte buffer", bytes, bytes_));
  MOEJIT_CU(cuMemcpyHtoD, ptr_, host, bytes);
}

void DeviceBuffer::download(void* host, std::size_t bytes) const {
  if (bytes > bytes_) throw std::out_of_range(fmt::format("download of {} bytes from a {}-byte buffer", bytes, bytes_));
  MOEJIT_CU(cuMemcpyDtoH, host, ptr_, bytes);
}

}  // namespace moejit::runtime
