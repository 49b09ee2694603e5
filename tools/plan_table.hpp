#pragma once
// `moejit plan` output: the geometry of several batch sizes side by side, in
// the shape of the seed paper's Table 2 (one column per batch), or as JSON.

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "codegen/device_profile.hpp"
#include "codegen/geometry.hpp"
#include "codegen/moe_config.hpp"

namespace moejit::tools {

// One planned batch: a geometry, or the planner's reason for rejecting it.
struct PlanOutcome {
  int batch = 0;
  std::optional<codegen::Geometry> geometry;
  std::string rejection;
};

// The table; `explain` appends each plan's notes.
std::string render_plan_table(const codegen::MoeConfig& config, const codegen::DeviceProfile& device,
                              const std::vector<PlanOutcome>& plans, bool explain);

// {"config": ..., "device": ..., "plans": [{"batch", "geometry"} or {"batch", "rejected"}]}
nlohmann::json plan_report_json(const codegen::MoeConfig& config, const codegen::DeviceProfile& device,
                                const std::vector<PlanOutcome>& plans);

}  // namespace moejit::tools
