#pragma once
// plan_launch's steps (codegen/moe_launch_plan.cpp), in the order it calls them: each decides some of
// MoeLaunchPlan's fields from the ones before it, adds a note saying why, and throws ConfigError for an option
// that cannot run (naming the field, its value and what is allowed) or PlanError for a shape that cannot.
#include <cstdint>

#include "codegen/device_profile.hpp"
#include "codegen/moe_atoms.hpp"
#include "codegen/moe_config.hpp"
#include "codegen/moe_launch_plan.hpp"

namespace moejit::codegen {

inline int ceil_div(std::int64_t a, std::int64_t b) {
  return static_cast<int>((a + b - 1) / b);
}

// codegen/plan_schedule.cpp
// GEMM1 on paired split rows in the segments of at most contract::kPairedRows rows: sets
// MoeLaunchPlan::paired_rows, and tile_n 8 where 8-column token tiles cover every segment (B <= 8, unless the
// options ask for another tile_n); above, up to the atom's paired_short_max_batch, the short segments of the
// wider tiles.
void plan_paired_rows(MoeLaunchPlan& p, const MoeConfig& config, int batch, const MoeCodegenOptions& options,
                      const AtomTraits& atom);

// The unit schedule's expected balance at B on `grid` CTAs: U / (grid * ceil(U / grid)), U the units (128
// intermediate columns each) of the expected active experts under uniform top-k routing, E (1 - (1 - k / E)^B),
// plus the fused shared expert, which every forward runs. 1: every CTA runs as many units.
double expected_unit_balance(const MoeConfig& config, int batch, int grid);

// The schedule (stream, units or items) and, for units, its consumer warpgroups.
void plan_schedule(MoeLaunchPlan& p, const MoeConfig& config, int batch, const DeviceProfile& device,
                   const MoeCodegenOptions& options, const AtomTraits& atom);

// codegen/plan_compute.cpp
// The compute items' 64-row tiles (halved until a token tile's last item is one the role runs).
void plan_items(MoeLaunchPlan& p, const MoeConfig& config, int batch, const AtomTraits& atom);
// Decoded scales (a decoder warp) and how the K-loop reads weight scale code 0.
void plan_weight_scales(MoeLaunchPlan& p, const MoeConfig& config, int batch, const MoeCodegenOptions& options,
                        const AtomTraits& atom);
void plan_token_frame(MoeLaunchPlan& p, const MoeConfig& config, int batch, const MoeCodegenOptions& options,
                      const AtomTraits& atom);
// codegen/plan_schedule.cpp, after expert parallelism's plan:
// who builds the compute CTA's routing tables (MoeLaunchPlan::warp_tables).
void plan_routing(MoeLaunchPlan& p, const MoeConfig& config, int batch, const MoeCodegenOptions& options);
// codegen/plan_compute.cpp
// The compute grid: CTAs per SM, the deepest ring that fits them, the activation warps and the register cap
// (after expert parallelism's plan, whose dispatch split leaves SMs out of the grid).
void plan_compute(MoeLaunchPlan& p, const MoeConfig& config, int batch, const DeviceProfile& device,
                  const MoeCodegenOptions& options, const AtomTraits& atom);

// codegen/plan_roles.cpp
// The dispatch role: launched only where the compute role cannot read the caller's x as it is.
void plan_dispatch(MoeLaunchPlan& p, const MoeConfig& config, int batch, const DeviceProfile& device,
                   const MoeCodegenOptions& options);
// The finalize role: the combine of every route's output row, or the sums of the unit schedule's partial rows.
void plan_finalize(MoeLaunchPlan& p, const MoeConfig& config, int batch, const DeviceProfile& device);

}  // namespace moejit::codegen
