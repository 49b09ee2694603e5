#pragma once
// The MMA atoms of the compute role, as the host sees them: one row per
// (target, path, recipe), read by the launch planner, the kernel specs and the
// weight transform. Adding an atom is a template (templates/moe_atom_*.cuh),
// its contract path and weight layout (templates/moe_contract.cuh,
// moe_weight_layouts.cuh) and a row here (docs/extending.md).

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "codegen/moe_config.hpp"
#include "codegen/target.hpp"

namespace moejit::codegen {

// Which numerics the compute role runs (docs/numerics.md).
enum class ComputePath {
  fast,   // sm_90a: E4M3 wgmma with FP32 scaling per K32 block; sm_120a: native block-scaled MMA
  exact,  // sm_90a: exact BF16 products (both operands dequantized), mma.sync bf16
};
std::string_view path_name(ComputePath p);  // "fast", "exact"
std::optional<ComputePath> parse_path(std::string_view text);
// The path a target runs for a recipe when none is asked for: the fast one
// wherever the recipe has it. On sm_90a the fast path meets the exact path's
// accuracy bar since GEMM1 sums split rows (docs/numerics.md); W4A16 exists on
// the exact atom only.
ComputePath default_path(Arch arch, Recipe recipe);
inline ComputePath resolve_path(std::optional<ComputePath> path, Arch arch, Recipe recipe) {
  return path ? *path : default_path(arch, recipe);
}

struct AtomTraits {
  Arch arch;
  ComputePath path;
  Recipe recipe;
  int contract_path;             // contract::MmaPath: the template's atom and the workspace's row formats
  const char* name;              // "sm90-fp8-wgmma"
  const char* compute_function;  // the templated device function the compute entry calls
  std::vector<std::string> required_instructions;  // what the validate pass must still find
  int weight_layout;                               // contract::WeightLayout of the step blobs
  int max_weight_scale_code;                       // larger UE8M0 weight scale codes are refused
  int groups;                                      // consumer warpgroups per compute CTA
  int tiles;        // 64-row weight tiles per item (a multiple of groups) where the model's M extents allow
  int ctas_per_sm;  // compute CTAs per SM the planner aims for (0: from the SMEM budget)
  int max_tile_n;   // the widest token tile its mainloop runs without serializing
  // Measured caps on the ring's depth for small forwards, by B ascending: the
  // first whose max_batch >= B applies, and the compute ring has at most its
  // `stages` stages. None applies above the last.
  struct SmallBatchRing {
    int max_batch = 0;
    int stages = 0;
  };
  std::vector<SmallBatchRing> small_batch_rings = {};
  // Up to this B the planner picks the unit schedule (Schedule::units) on unit_groups warpgroups for a single-GPU
  // layer whose partial rows fit the workspace (above it, see unit_balanced_max_batch); 0: never. Measured; only
  // the sm90-fp8-wgmma atom runs it.
  int unit_max_batch = 0;
  // Up to this B the runtime launches the roles with programmatic dependent launch (MoeLaunchPlan::pdl) on one
  // GPU: the compute role's routing prologue and first weight copies then run while the dispatch role does. 0:
  // never. Measured per atom.
  int pdl_max_batch = 0;
  // Up to this B the planner picks the item schedule (Schedule::items) for a single-GPU layer; 0: never. Only
  // the sm_90a exact path's atoms run it (contract::schedule_items_runs). Measured.
  int item_max_batch = 0;
  // The unit schedule's consumer warpgroups up to unit_max_batch: 2 (a pair of its 4-tile items each) or 3
  // (step owners, contract::step_owners; two above it), and the step owners' ring depth (they hold three stages at
  // once, so the copies in flight need more; 0: as the small-batch rings). Measured.
  int unit_groups = 2;
  int owner_stages = 0;
  // The ring depth of the unit schedule on two warpgroups (a pair of tiles each; 0: as the small-batch rings).
  // Measured.
  int pair_stages = 0;
  // Above unit_max_batch and up to this B, the unit schedule (on two warpgroups) is planned where the expected
  // unit balance, the units of the expected active experts over the grid's rounds of them
  // (expected_unit_balance), is at least unit_min_balance: whole units leave a CTA idle for a round the stream
  // schedule would split. Measured.
  int unit_balanced_max_batch = 0;
  double unit_min_balance = 1.0;
  // Above B = 8 (up to which 8-column token tiles cover every segment) and up to this B, the planner pairs GEMM1's
  // segments of at most contract::kPairedRows rows inside the wider token tiles (MoeLaunchPlan::paired_rows);
  // 0: never. Measured; only split-row atoms pair.
  int paired_short_max_batch = 0;
  // From this B the planner stages GEMM1's rows in one scale frame per token (MoeLaunchPlan::token_frame) where
  // the weights allow; 0: never. Measured; only split-row atoms have the frame.
  int token_frame_min_batch = 0;
};

// The atom for (target, path, recipe); nullptr when the target has no such path.
const AtomTraits* find_atom(Target target, ComputePath path, Recipe recipe = Recipe::w4a8_mx);
// Every row of the table.
const std::vector<AtomTraits>& all_atoms();

}  // namespace moejit::codegen
