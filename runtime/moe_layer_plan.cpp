// The layer's pure parts: its checks of config, options and arguments. No GPU needed.
#include <fmt/format.h>

#include "codegen/planner.hpp"
#include "runtime/moe_layer.hpp"

namespace moejit::runtime {

void validate_layer_config(const codegen::MoeConfig& config) {
  codegen::validate(config);
  // Expert parallelism (R > 1, runtime/ep_ranks.hpp) runs routed experts only.
  if (config.ranks > 1 && config.shared_expert)
    throw InvalidInput("shared_expert", fmt::format("shared_expert = true is not supported with ranks R = {} > 1: "
                                                    "expert parallelism runs routed experts only (R = 1 fuses it)",
                                                    config.ranks));
  // The dispatch role counts routes per expert in shared memory.
  if (config.experts > 2048)
    throw InvalidInput(
        "experts", fmt::format("experts E = {} is outside the range this version supports [1, 2048]", config.experts));
}

void validate_layer_options(const MoeLayerOptions& o) {
  codegen::validate(o.codegen);
  if (o.device < 0 || o.device > 1023)
    throw InvalidInput("device", fmt::format("device = {} is outside the allowed range [0, 1023]", o.device));
  if (o.sm_count < 0 || o.sm_count > 4096)
    throw InvalidInput("sm_count", fmt::format("sm_count = {} is outside the allowed range [0, 4096] (0: the "
                                               "device's SMs)",
                                               o.sm_count));
}

codegen::DeviceProfile device_profile(const DeviceInfo& d) {
  codegen::LiveDeviceNumbers live;
  live.name = d.name;
  live.target = codegen::parse_target(d.target_name()).value_or(codegen::Target{});
  live.sm_count = d.sm_count;
  live.smem_per_sm = d.smem_per_sm;
  live.smem_per_block_optin = d.smem_per_block_optin;
  live.regs_per_sm = d.regs_per_sm;
  live.max_threads_per_block = d.max_threads_per_block;
  live.max_threads_per_sm = d.max_threads_per_sm;
  return codegen::from_live_device(live);
}

void validate_forward_args(const codegen::MoeConfig& config, const MoeLayerOptions& options, const MoeForwardArgs& a) {
  if (a.tokens < 1 || a.tokens > config.token_capacity)
    throw InvalidInput("tokens", fmt::format("tokens B = {} is outside the allowed range [1, {}] (token capacity)",
                                             a.tokens, config.token_capacity));
  if (config.ranks > 1 && a.workspace == 0)
    throw InvalidInput("workspace", fmt::format("workspace = 0x0 is invalid with ranks R = {}: a rank runs on the "
                                                "caller's workspace, set up with init_rank_workspace "
                                                "(docs/expert-parallelism.md)",
                                                config.ranks));
  auto pointer = [](const char* field, CUdeviceptr p, unsigned alignment) {
    if (p == 0 || p % alignment != 0)
      throw InvalidInput(field, fmt::format("{} = 0x{:x} is invalid: must be a non-null {}-byte aligned device "
                                            "pointer",
                                            field, p, alignment));
  };
  if (options.codegen.input_bf16) {
    pointer("x_bf16", a.x_bf16, 16);
  } else {
    pointer("x_q", a.x_q, 16);
    pointer("x_scales", a.x_scales, config.hidden % 128 == 0 ? 4 : 1);  // words, or bytes [B][H/32]
  }
  pointer("topk_ids", a.topk_ids, 4);
  pointer("topk_weights", a.topk_weights, 4);
  pointer("y", a.y, 16);
  if (a.workspace) pointer("workspace", a.workspace, 256);
}

void validate_route_ids(const codegen::MoeConfig& config, const std::vector<std::int32_t>& ids) {
  // Global expert ids: with R ranks a token may reach any rank's experts (docs/expert-parallelism.md).
  for (std::size_t i = 0; i < ids.size(); ++i)
    if (ids[i] < 0 || ids[i] >= config.experts)
      throw InvalidInput("topk_ids", fmt::format("topk_ids[{}][{}] = {} is outside the allowed range [0, {})",
                                                 i / config.top_k, i % config.top_k, ids[i], config.experts));
}

}  // namespace moejit::runtime
