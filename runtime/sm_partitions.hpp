#pragma once
// SM partitions of one GPU through green contexts: R equal sets of SMs, each
// with its own context and stream, so R persistent kernels run side by side on
// disjoint SMs as they would on R GPUs. Expert parallelism's ranks on one GPU
// run in them (each rank plans its grids for its partition's SM count).

#include <cuda.h>

#include <vector>

namespace moejit::runtime {

// `parts` equal partitions of `sm_count` SMs, each a multiple of `alignment`
// (the driver's co-scheduling granularity, CUdevSmResource::smCoscheduledAlignment:
// 8 on the H200); the SMs the rounding leaves over stay unused.
struct PartitionShape {
  int parts = 0;
  int sms_per_part = 0;
  int unused_sms = 0;
};
// Throws ConfigError("parts") unless 1 <= parts <= sm_count / alignment.
PartitionShape partition_shape(int sm_count, int alignment, int parts);

class SmPartitions {
 public:
  // Splits device `ordinal`'s SMs (the driver's count and alignment) into `parts`.
  SmPartitions(int ordinal, int parts);
  ~SmPartitions();
  SmPartitions(const SmPartitions&) = delete;
  SmPartitions& operator=(const SmPartitions&) = delete;

  // partition_shape(), or smaller parts where the driver's symmetric split needs them.
  const PartitionShape& shape() const { return shape_; }
  int size() const { return static_cast<int>(parts_.size()); }
  // What the driver gave part i (CUdevSmResource::smCount): shape().sms_per_part.
  int sm_count(int i) const { return parts_.at(i).sms; }
  // Part i's context: current while a layer of that part is built and its kernels are loaded.
  CUcontext context(int i) const { return parts_.at(i).context; }
  // A non-blocking stream whose work runs on part i's SMs only.
  CUstream stream(int i) const { return parts_.at(i).stream; }

 private:
  struct Part {
    CUgreenCtx green = nullptr;
    CUcontext context = nullptr;
    CUstream stream = nullptr;
    int sms = 0;
  };
  void release() noexcept;
  PartitionShape shape_;
  std::vector<Part> parts_;
};

}  // namespace moejit::runtime
