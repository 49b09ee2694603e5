#pragma once
// DeviceProfile: the device limits the planner reads. Built-in profiles serve
// tests, CI and `moejit plan`; at run time the runtime reads the live device
// through the driver and builds one with from_live_device(). codegen never
// calls the driver itself.

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "codegen/target.hpp"

namespace moejit::codegen {

struct DeviceProfile {
  std::string name;
  Target target;
  int sm_count = 0;
  int smem_per_sm = 0;     // bytes: S_sm of eq. (4)
  int smem_per_block = 0;  // bytes: the opt-in maximum dynamic SMEM of one block
  int regs_per_sm = 0;     // 32-bit registers
  int max_threads_per_block = 0;
  int max_threads_per_sm = 0;
  // The green-context SM alignment `a` of eq. (5): SM partitions come in
  // multiples of it.
  int gc_granularity = 0;

  friend bool operator==(const DeviceProfile&, const DeviceProfile&) = default;
};

// `h200` and `h100` (sm_90a, H100 SXM5: the H200's numbers) and `rtx-pro-5000` (sm_120a). Throws std::invalid_argument
// naming the known profiles.
DeviceProfile builtin_profile(std::string_view name);
std::vector<std::string> builtin_profile_names();

// The green-context alignment moejit assumes for a target when the driver
// does not report one (CUdevSmResource::smCoscheduledAlignment is the live
// figure):
//   sm_90a / sm_100a: 8. Hopper partitions come in steps of 8 SMs
//     (DESIGN.md, checked on the H200; 2 only with
//     CU_DEV_SM_RESOURCE_SPLIT_IGNORE_SM_COSCHEDULING, which gives up the
//     co-scheduling guarantee the grid-wide role barriers rely on).
//   sm_120a: 2, what the paper implies. §4.2 states one shape constraint on
//     the compute partition beyond its size, "S_compute even", i.e. it is
//     built from 2-SM units (one TPC), and the default 6 dispatch SMs of a
//     110-SM RTX PRO 5000 then split exactly into 6 + 104. (An alignment of 8
//     gives the same default split, 104 = 13 * 8, but not for other
//     GC_MOE_SM120_DISPATCH_SMS values, which the paper lets vary freely.)
int default_gc_granularity(Target target);

// The numbers the runtime reads from the driver (CU_DEVICE_ATTRIBUTE_*), as
// plain integers so that codegen stays driver-free.
struct LiveDeviceNumbers {
  std::string name;
  Target target;
  int sm_count = 0;               // MULTIPROCESSOR_COUNT
  int smem_per_sm = 0;            // MAX_SHARED_MEMORY_PER_MULTIPROCESSOR
  int smem_per_block_optin = 0;   // MAX_SHARED_MEMORY_PER_BLOCK_OPTIN
  int regs_per_sm = 0;            // MAX_REGISTERS_PER_MULTIPROCESSOR
  int max_threads_per_block = 0;  // MAX_THREADS_PER_BLOCK
  int max_threads_per_sm = 0;     // MAX_THREADS_PER_MULTIPROCESSOR
  int gc_granularity = 0;         // 0: default_gc_granularity(target)
};
// Builds and validates a profile from live numbers. Throws ConfigError.
DeviceProfile from_live_device(const LiveDeviceNumbers& live);

// Every field positive and consistent (a block's SMEM fits the SM's, the
// roles' 384 threads fit a block). Throws ConfigError with field "device.<key>".
void validate(const DeviceProfile& profile);

// JSON keys are the field names; "target" is the target's name ("sm_90a").
void to_json(nlohmann::json& j, const DeviceProfile& p);
void from_json(const nlohmann::json& j, DeviceProfile& p);

}  // namespace moejit::codegen
