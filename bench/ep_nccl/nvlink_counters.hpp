#pragma once
// The NVLink data bytes a GPU sent and received, from NVML's throughput
// counters (data without protocol overhead, summed over the GPU's links),
// read before and after a timed loop: the bytes between GPUs that
// moejit_ep_nccl bench measures beside the ones its routes imply. NVML is the
// driver's libnvidia-ml.so.1, loaded with dlopen like libcuda.

#include <cuda.h>

#include <optional>
#include <string>

namespace moejit::bench {

class NvlinkCounters {
 public:
  struct Bytes {
    double tx = 0, rx = 0;
  };
  // The counters of CUDA device `device` (matched to NVML by PCI bus id), or nothing with `why` set: no NVML,
  // the device not found, or no NVLink counter readable (a GPU without NVLink).
  static std::optional<NvlinkCounters> open(CUdevice device, std::string* why);
  Bytes read() const;  // since the driver loaded; throws std::runtime_error if NVML fails

 private:
  void* handle_ = nullptr;  // nvmlDevice_t
  int links_ = 0;           // 0: NVML sums the links (scope UINT_MAX); else links 0..links_-1 read one by one
};

}  // namespace moejit::bench
