#include "runtime/sm_partitions.hpp"

#include <fmt/format.h>

#include "codegen/moe_config.hpp"
#include "runtime/driver_api.hpp"

namespace moejit::runtime {

PartitionShape partition_shape(int sm_count, int alignment, int parts) {
  if (sm_count < 1 || alignment < 1)
    throw codegen::ConfigError(
        "sm_count", fmt::format("a device of {} SMs in steps of {} cannot be partitioned", sm_count, alignment));
  const int most = sm_count / alignment;
  if (parts < 1 || parts > most)
    throw codegen::ConfigError(
        "parts", fmt::format("parts = {} is outside the allowed range [1, {}] ({} SMs in steps of {})", parts, most,
                             sm_count, alignment));
  PartitionShape s;
  s.parts = parts;
  s.sms_per_part = sm_count / parts / alignment * alignment;
  s.unused_sms = sm_count - parts * s.sms_per_part;
  return s;
}

SmPartitions::SmPartitions(int ordinal, int parts) {
  CUdevice device = 0;
  MOEJIT_CU(cuDeviceGet, &device, ordinal);
  CUdevResource all{};
  MOEJIT_CU(cuDeviceGetDevResource, device, &all, CU_DEV_RESOURCE_TYPE_SM);
  const int alignment = static_cast<int>(all.sm.smCoscheduledAlignment);
  shape_ = partition_shape(static_cast<int>(all.sm.smCount), alignment, parts);
  // The driver may make fewer groups of a size than the count suggests (its
  // symmetric split follows the GPCs): ask it, and step down until `parts` fit.
  for (;; shape_.sms_per_part -= alignment) {
    if (shape_.sms_per_part < alignment)
      throw std::runtime_error(
          fmt::format("SmPartitions: the driver splits no {} equal partitions out of {} SMs", parts, all.sm.smCount));
    unsigned int possible = 0;
    MOEJIT_CU(cuDevSmResourceSplitByCount, nullptr, &possible, &all, nullptr, 0u,
              static_cast<unsigned int>(shape_.sms_per_part));
    if (possible >= static_cast<unsigned int>(parts)) break;
  }
  shape_.unused_sms = static_cast<int>(all.sm.smCount) - parts * shape_.sms_per_part;
  std::vector<CUdevResource> groups(parts);
  unsigned int made = static_cast<unsigned int>(parts);
  CUdevResource rest{};
  MOEJIT_CU(cuDevSmResourceSplitByCount, groups.data(), &made, &all, &rest, 0u,
            static_cast<unsigned int>(shape_.sms_per_part));
  if (made != static_cast<unsigned int>(parts))
    throw std::runtime_error(
        fmt::format("SmPartitions: the driver made {} partitions of {} SMs, not {}", made, shape_.sms_per_part, parts));
  try {
    for (CUdevResource& group : groups) {
      Part p;
      p.sms = static_cast<int>(group.sm.smCount);
      CUdevResourceDesc desc = nullptr;
      MOEJIT_CU(cuDevResourceGenerateDesc, &desc, &group, 1u);
      MOEJIT_CU(cuGreenCtxCreate, &p.green, desc, device, static_cast<unsigned int>(CU_GREEN_CTX_DEFAULT_STREAM));
      parts_.push_back(p);  // owned from here: release() destroys it
      MOEJIT_CU(cuCtxFromGreenCtx, &parts_.back().context, p.green);
      MOEJIT_CU(cuGreenCtxStreamCreate, &parts_.back().stream, p.green,
                static_cast<unsigned int>(CU_STREAM_NON_BLOCKING), 0);
    }
  } catch (...) {
    release();
    throw;
  }
}

SmPartitions::~SmPartitions() {
  release();
}

void SmPartitions::release() noexcept {
  const DriverApi* api = try_driver();
  if (!api) return;
  for (Part& p : parts_) {
    if (p.stream) api->cuStreamDestroy(p.stream);
    if (p.green) api->cuGreenCtxDestroy(p.green);
  }
  parts_.clear();
}

}  // namespace moejit::runtime
