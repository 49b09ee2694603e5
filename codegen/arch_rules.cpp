#include "codegen/arch_rules.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace moejit::codegen {
namespace {
constexpr ArchRules k_sm120a{
    .arch = Arch::sm_120a,
    .always_compact_weights = false,
    .activation_bytes = 1,
    .stage_co_residency = 0,
    .max_stages = 4,
};

// H200: 227 KiB per block and 228 KiB per SM, 2.3x the RTX PRO 5000. HBM3e
// stays busy only with ~32 KB of loads in flight per SM (Little's law:
// 4.8 TB/s x ~0.8 us latency / 132 SMs = 29 KB, plus margin), which two
// stages of a narrow tile do not reach. So the depth grows into the SMEM the
// paper's two-stage rule would leave idle, up to 8, while two role-2 CTAs
// still fit per SM: c = 2 keeps the highest register cap that still shares
// the SM (160, eq. 4) instead of losing half the latency hiding to c = 1
// (§3). eq. (4) then sets c from the S_role2 actually chosen, so a shape whose
// 8-stage model fits three times (tile_n = 16) gets c = 3.
constexpr ArchRules k_sm90a{
    .arch = Arch::sm_90a,
    .always_compact_weights = true,
    .activation_bytes = 2,
    .stage_co_residency = 2,
    .max_stages = 8,
};

SmemModel model_at(SmemInputs shape, int stages) {
  shape.stages = stages;
  return role2_smem_model(shape);
}
}  // namespace

const ArchRules* find_arch_rules(Target target) {
  switch (target.arch) {
    case Arch::sm_120a: return &k_sm120a;
    case Arch::sm_90a: return &k_sm90a;
    case Arch::sm_100a: return nullptr;
  }
  return nullptr;
}

int min_stages(int tile_n) {
  return tile_n <= 16 ? 4 : 2;
}

StageChoice choose_stages(const ArchRules& rules, const SmemInputs& shape, const DeviceProfile& device) {
  StageChoice out;
  const int lo = min_stages(shape.tile_n);
  if (rules.stage_co_residency == 0) {
    out.smem = model_at(shape, lo);
    if (out.smem.role2_bytes <= device.smem_per_block) {
      out.stages = lo;
      out.reason = fmt::format("stages = {}: tile_n = {} {} (§4.4)", lo, shape.tile_n,
                               lo == 4 ? "is too narrow to hide latency with two" : "> 16 uses two");
    } else {
      out.reason = fmt::format("S_role2 = {} B at {} stages exceeds the {} B a block may use", out.smem.role2_bytes, lo,
                               device.smem_per_block);
    }
    return out;
  }
  const int shared_budget = std::min(device.smem_per_block, device.smem_per_sm / rules.stage_co_residency);
  for (int budget : {shared_budget, device.smem_per_block}) {
    for (int s = rules.max_stages; s >= lo; --s) {
      SmemModel m = model_at(shape, s);
      if (m.role2_bytes > budget) continue;
      out.stages = s;
      out.smem = m;
      const std::string deeper =
          s == rules.max_stages ? fmt::format("the {}-stage maximum", rules.max_stages)
                                : fmt::format("{} stages would need {} B", s + 1, model_at(shape, s + 1).role2_bytes);
      out.reason = budget == shared_budget
                       ? fmt::format(
                             "stages = {}: the deepest in [{}, {}] with S_role2 = {} B <= {} B, keeping {} "
                             "CTAs per SM ({})",
                             s, lo, rules.max_stages, m.role2_bytes, budget, rules.stage_co_residency, deeper)
                       : fmt::format(
                             "stages = {}: no depth keeps {} CTAs per SM; the deepest in [{}, {}] within the "
                             "{} B block limit ({}), so c = 1",
                             s, rules.stage_co_residency, lo, rules.max_stages, budget, deeper);
      return out;
    }
  }
  out.smem = model_at(shape, lo);
  out.reason = fmt::format("S_role2 = {} B at the minimum {} stages exceeds the {} B a block may use",
                           out.smem.role2_bytes, lo, device.smem_per_block);
  return out;
}

}  // namespace moejit::codegen
