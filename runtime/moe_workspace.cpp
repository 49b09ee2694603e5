#include "runtime/moe_workspace.hpp"

namespace moejit::runtime {

MoeWorkspaceLayout MoeWorkspaceLayout::make(int experts, int top_k, int hidden, int intermediate, int token_capacity) {
  MoeWorkspaceLayout l;
  std::size_t at = 0;
  auto region = [&](std::size_t bytes) {
    const std::size_t offset = at;
    at += (bytes + 255) / 256 * 256;
    return offset;
  };
  const std::size_t routes = std::size_t(token_capacity) * top_k;
  l.header = region(16);
  l.token_poison = region(4 * std::size_t(token_capacity));
  l.route_slot = region(4 * routes);
  l.active_expert = region(4 * std::size_t(experts));
  l.active_rows = region(4 * std::size_t(experts));
  l.active_base = region(4 * std::size_t(experts));
  l.item_begin1 = region(4 * (std::size_t(experts) + 1));
  l.item_begin2 = region(4 * (std::size_t(experts) + 1));
  l.l1_done = region(4 * std::size_t(experts));
  l.l1_target = region(4 * std::size_t(experts));
  l.x_q = region(std::size_t(token_capacity) * hidden);
  l.x_scales = region(std::size_t(token_capacity) * hidden / 32);
  l.x_bf16 = region(2 * std::size_t(token_capacity) * hidden);
  l.handoff = region(2 * routes * intermediate);
  l.arena = region(2 * routes * hidden);
  l.total = at;
  return l;
}

std::vector<CUdeviceptr> MoeWorkspaceLayout::pointers(CUdeviceptr base) const {
  return {base + header,      base + token_poison, base + route_slot,  base + active_expert, base + active_rows,
          base + active_base, base + item_begin1,  base + item_begin2, base + l1_done,       base + l1_target,
          base + x_q,         base + x_scales,     base + x_bf16,      base + handoff,       base + arena};
}

}  // namespace moejit::runtime
