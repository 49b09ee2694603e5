#pragma once
// The MoE workspace layout (seed §5.3): one flat device allocation, carved
// into the regions of templates/moe_workspace.cuh. Offsets are 256-byte
// aligned so every region suits 16-byte vector access and bulk copies.

#include <cstddef>
#include <vector>

#include "runtime/driver_api.hpp"

namespace moejit::runtime {

// The host's view of the workspace header (templates' MoeHeader).
struct MoeHeaderView {
  int n_active, items1, items2, epoch;
};

struct MoeWorkspaceLayout {
  // Byte offsets, in the order of MOEJIT_WORKSPACE_FORMALS.
  std::size_t header, token_poison, route_slot, active_expert, active_rows, active_base, item_begin1, item_begin2,
      l1_done, l1_target, x_q, x_scales, x_bf16, handoff, arena;
  std::size_t total = 0;

  static MoeWorkspaceLayout make(int experts, int top_k, int hidden, int intermediate, int token_capacity);
  // The 15 device pointers for base address `base`, in formal order.
  std::vector<CUdeviceptr> pointers(CUdeviceptr base) const;
};

}  // namespace moejit::runtime
