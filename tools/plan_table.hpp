#pragma once
// `moejit plan` output, one column per batch: first the launch plan (what
// MoeLayer launches, role by role), then the GC-MoE §4.4 decision chain in
// the shape of the seed paper's Table 2 (the expert-parallel rule set); or JSON.

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "codegen/device_profile.hpp"
#include "codegen/geometry.hpp"
#include "codegen/moe_config.hpp"
#include "codegen/moe_launch_plan.hpp"

namespace moejit::tools {

// One planned batch: the launch plan (what MoeLayer launches) and the §4.4
// chain's geometry, each or the reason it was rejected.
struct PlanOutcome {
  int batch = 0;
  std::optional<codegen::Geometry> geometry;
  std::string rejection;
  std::optional<codegen::MoeLaunchPlan> launch;
  std::string launch_rejection;
};

// The table; `explain` appends each plan's notes.
std::string render_plan_table(const codegen::MoeConfig& config, const codegen::DeviceProfile& device,
                              const std::vector<PlanOutcome>& plans, bool explain);

// {"config", "device", "plans": [{"batch", "launch" | "launch_rejected", "geometry" | "rejected"}]}
nlohmann::json plan_report_json(const codegen::MoeConfig& config, const codegen::DeviceProfile& device,
                                const std::vector<PlanOutcome>& plans);

}  // namespace moejit::tools
