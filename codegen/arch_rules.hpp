#pragma once
// The points where the planner's decision chain depends on the target. The
// chain itself (planner.cpp) is the paper's §4.4 for every target; only these
// rules vary. sm_120a follows the paper exactly; sm_90a's differences, and why,
// are documented here and in planner_sm90a.md.

#include <string>
#include <string_view>

#include "codegen/device_profile.hpp"
#include "codegen/smem_model.hpp"
#include "codegen/target.hpp"

namespace moejit::codegen {

struct ArchRules {
  Arch arch = Arch::sm_120a;
  // sm_90a: true. Hopper's TMA has no FP4 -> 8-bit expanding mode (the
  // expanded path of §4.3 needs it), so the weight tile is always staged as
  // raw nibbles and expanded in registers. sm_120a: false; §4.4 turns compact
  // on for tile_n in {48, 80, 96} only.
  bool always_compact_weights = false;
  // Bytes per staged activation element in P_X (eq. 11). sm_120a: 1, the
  // QMMA's B operand is the FP8 row itself. sm_90a: 2, the Hopper MMA is BF16
  // mma.sync m16n8k16, so each token row is dequantized to BF16 (with its
  // UE8M0 scale folded in, exactly) once before the mainloop and staged as
  // BF16: P_X = tile_n * 128 * 2 + 512.
  int activation_bytes = 1;
  // Pipeline depth. 0: the paper's rule (4 stages at tile_n = 16, 2
  // otherwise), right for 99 KiB per block. > 0: the deepest s_st in
  // [min_stages(tile_n), max_stages] whose S_role2 fits
  // min(S_block, floor(S_sm / stage_co_residency)), i.e. keeps that many CTAs
  // co-resident; if no depth does, the deepest that fits S_block alone (c = 1).
  int stage_co_residency = 0;
  int max_stages = 4;
};

// The rule set for `target`, or nullptr if the planner has none (sm_100a).
const ArchRules* find_arch_rules(Target target);

// The paper's floor on the depth: four stages at tile_n = 16, "where the tiles
// are too small to hide latency with only two", two otherwise.
int min_stages(int tile_n);

struct StageChoice {
  int stages = 0;  // 0: no depth fits the device (the planner rejects)
  SmemModel smem;
  std::string reason;  // why this depth, or why none
};
// Picks s_st for `shape` (whose `stages` is ignored) under `rules` on `device`
// and returns the SMEM model at that depth.
StageChoice choose_stages(const ArchRules& rules, const SmemInputs& shape, const DeviceProfile& device);

}  // namespace moejit::codegen
