#pragma once
// The geometry planner: a pure, deterministic function from a launch shape
// (MoeConfig, batch B, DeviceProfile) to a Geometry, or a PlanError that says
// why the shape cannot run. It never degrades silently: every fallback it
// takes is one the paper defines, and is written into Geometry::notes.
//
// The decision chain is the seed paper's §4.4 (with §4.2's partition and
// §4.5's dispatch knobs), in this order: r (eq. 1) -> tile_n (eq. 8) ->
// compact weights -> handoff kind and slots -> batched returns -> mirrored
// metadata -> relay staging -> pull cache and pull batch depth -> direct scan
// -> l -> stages and the SMEM model (eq. 9-12) -> c and Rcap (eq. 4) ->
// partition (eq. 5) -> grids (eq. 13 and §4.4) -> residency (eq. 6).
// Target-specific rules live in arch_rules.hpp; planner_sm90a.md lists them.

#include <stdexcept>

#include "codegen/device_profile.hpp"
#include "codegen/geometry.hpp"
#include "codegen/moe_config.hpp"

namespace moejit::codegen {

// A valid configuration that cannot be planned on this device (no rule set
// for the target, an unusable partition, a model that does not fit, a grid
// that cannot be resident). Invalid input raises ConfigError instead.
class PlanError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// eq. (1): r = ceil(B k / L).
int rows_per_expert(int batch, int top_k, int local_experts);

// eq. (8) with its fallbacks. moejit's return leg is always full-width BF16
// (§4.6: the 12-bit codec is gone), so the BF16 handoff path is always the
// active one and these are the only tiers:
//   32 for 16 <= r < 32, 48 for 32 <= r < 48,
//   80 for 64 <= r < 96 with r + floor(sqrt r) <= 80, 96 for 64 <= r < 96 otherwise;
//   16 for r < 16; 64 otherwise (48 <= r < 64, and r >= 96, where an expert
//   spans ceil(r / 64) token tiles).
int token_tile(int rows_per_expert);

// The l2-dedicated reservation l of §4.4: 1 by default; 4 once tile_n >= 64
// or a global handoff is in use; 6 for the unbatched tile_n = 80 tier; 3 when
// batched returns run without relay copiers and no shared expert is fused.
int l2_dedicated(int tile_n, HandoffKind handoff, bool batched_returns, bool relay_staging, bool shared_expert);

// Plans one shape. Throws ConfigError for invalid input (config, batch or
// profile) and PlanError for a valid shape this device cannot run.
Geometry plan(const MoeConfig& config, int batch, const DeviceProfile& device);

}  // namespace moejit::codegen
