#pragma once
// The per-kernel resource figures ptxas reports through nvJitLink's -verbose log.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace moejit::codegen {

struct KernelResources {
  std::string name;
  int registers = 0;
  int barriers = 0;
  int stack_frame_bytes = 0;
  int spill_store_bytes = 0;
  int spill_load_bytes = 0;
  int shared_bytes = 0;  // static SMEM of the kernel itself (dynamic SMEM is the launcher's)
  int local_bytes = 0;   // lmem
  double ptxas_millis = 0;

  friend bool operator==(const KernelResources&, const KernelResources&) = default;
};

struct ResourceReport {
  std::vector<KernelResources> kernels;

  const KernelResources* find(std::string_view kernel) const;
  friend bool operator==(const ResourceReport&, const ResourceReport&) = default;
};

// Parses nvJitLink's info log (ptxas "Function properties" / "Used N registers" lines).
// Kernels the log never mentions are absent; unrecognised lines are ignored.
ResourceReport parse_resource_report(std::string_view info_log);

void to_json(nlohmann::json& j, const KernelResources& k);
void from_json(const nlohmann::json& j, KernelResources& k);
void to_json(nlohmann::json& j, const ResourceReport& r);
void from_json(const nlohmann::json& j, ResourceReport& r);

}  // namespace moejit::codegen
