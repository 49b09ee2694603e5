#pragma once
// GPU targets moejit emits code for. The target decides the MMA atom and the
// planner's limits; everything else in a kernel is shared.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace moejit::codegen {

enum class Arch { sm_90a, sm_100a, sm_120a };

struct Target {
  Arch arch = Arch::sm_90a;

  std::string_view name() const;          // "sm_90a": nvJitLink's -arch
  std::string_view virtual_arch() const;  // "compute_90a": NVRTC's -arch (PTX only)
  int compute_capability() const;         // 90, 100, 120

  friend bool operator==(const Target&, const Target&) = default;
};

// Parses "sm_90a" (or "90a"); nullopt if unknown.
std::optional<Target> parse_target(std::string_view text);
// Every target moejit knows, in a stable order.
std::vector<Target> all_targets();
// The names of all targets, comma separated, for error messages.
std::string target_names();

}  // namespace moejit::codegen
