#pragma once
// The compute role's schedule and GEMM1's token-tile pairing (plan_launch's steps; codegen/plan_schedule.cpp).
#include "codegen/device_profile.hpp"
#include "codegen/moe_atoms.hpp"
#include "codegen/moe_config.hpp"
#include "codegen/moe_launch_plan.hpp"

namespace moejit::codegen {

// GEMM1 on paired split rows where no segment can have more rows than contract::kPairedRows' pairs: sets
// MoeLaunchPlan::paired_rows and tile_n 8 (unless the options ask for another tile_n).
void plan_paired_rows(MoeLaunchPlan& p, const MoeConfig& config, int batch, const MoeCodegenOptions& options);

// The unit schedule's expected balance at B on `grid` CTAs: U / (grid * ceil(U / grid)), U the units (128
// intermediate columns each) of the expected active experts under uniform top-k routing, E (1 - (1 - k / E)^B),
// plus the fused shared expert, which every forward runs. 1: every CTA runs as many units.
double expected_unit_balance(const MoeConfig& config, int batch, int grid);

// The schedule (stream or units) and, for units, its consumer warpgroups; throws ConfigError for a schedule the
// options ask for that cannot run, naming the field, its value and what is allowed.
void plan_schedule(MoeLaunchPlan& p, const MoeConfig& config, int batch, const DeviceProfile& device,
                   const MoeCodegenOptions& options, const AtomTraits& atom);

}  // namespace moejit::codegen
