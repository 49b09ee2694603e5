// The layer's pure parts: its checks of config and arguments, and the
// planner's geometry as the role kernels' shape. No GPU needed.
#include <fmt/format.h>

#include <limits>

#include "codegen/planner.hpp"
#include "runtime/moe_layer.hpp"

namespace moejit::runtime {

reference::MoeProblem problem_of(const codegen::MoeConfig& config) {
  return {config.local_experts(), config.top_k, config.hidden, config.intermediate,
          config.swiglu_clamp.value_or(std::numeric_limits<float>::infinity())};
}

void validate_layer_config(const codegen::MoeConfig& config) {
  codegen::validate(config);
  if (config.ranks != 1)
    throw InvalidInput("ranks",
                       fmt::format("ranks R = {} is not supported yet: MoeLayer runs one GPU (R = 1)", config.ranks));
  // The dispatch role counts routes per expert in shared memory.
  if (config.experts > 2048)
    throw InvalidInput(
        "experts", fmt::format("experts E = {} is outside the range this version supports [1, 2048]", config.experts));
  if (config.shared_expert)
    throw InvalidInput("shared_expert", "shared_expert: a fused shared expert is not supported yet");
}

void validate_layer_options(const MoeLayerOptions& o) {
  auto range = [](const char* field, int value, int lo, int hi) {
    if (value < lo || value > hi)
      throw InvalidInput(
          field, fmt::format("{} = {} is outside the allowed range [{}, {}] (0: as planned)", field, value, lo, hi));
  };
  range("tile_n", o.tile_n, 0, 64);
  if (o.tile_n % 8 != 0)
    throw InvalidInput("tile_n", fmt::format("tile_n = {} must be a multiple of 8 (0: as planned)", o.tile_n));
  range("stages", o.stages, 0, 16);
  range("ctas_per_sm", o.ctas_per_sm, 0, 16);
  range("compute_grid", o.compute_grid, 0, 1 << 20);
  range("device", o.device, 0, 1023);
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

codegen::MoeKernelShape plan_kernel_shape(const codegen::MoeConfig& config, const MoeLayerOptions& options, int tokens,
                                          const codegen::DeviceProfile& profile) {
  const codegen::Geometry g = codegen::plan(config, tokens, profile);
  codegen::MoeKernelShape s;
  s.experts = config.local_experts();
  s.top_k = config.top_k;
  s.hidden = config.hidden;
  s.intermediate = config.intermediate;
  s.input_bf16 = options.input_bf16;
  s.tile_n = options.tile_n ? options.tile_n : g.tile_n;
  s.min_blocks_per_sm = g.co_residency;
  s.max_registers = g.register_cap;
  s.stages = g.stages;
  if (options.ctas_per_sm) {
    // Tuning: the deepest pipeline that lets `ctas_per_sm` CTAs share an SM.
    s.min_blocks_per_sm = options.ctas_per_sm;
    s.stages = 8;
    while (s.stages > 2 && codegen::compute_smem_bytes(s) > profile.smem_per_sm / options.ctas_per_sm - 2048)
      --s.stages;
  }
  if (options.stages) s.stages = options.stages;
  return s;
}

std::vector<codegen::KernelSpec> moe_kernel_specs(const codegen::MoeConfig& config, const MoeLayerOptions& options,
                                                  int tokens, const codegen::DeviceProfile& profile) {
  const codegen::MoeKernelShape shape = plan_kernel_shape(config, options, tokens, profile);
  const codegen::Target target = profile.target;
  const int E = config.local_experts(), H = config.hidden, I = config.intermediate;
  return {codegen::moe_dispatch_spec(shape, target), codegen::moe_compute_spec(shape, target),
          codegen::moe_finalize_spec(shape, target), codegen::moe_weight_transform_spec(E, 2 * I, H, true, target),
          codegen::moe_weight_transform_spec(E, H, I, false, target)};
}

void validate_forward_args(const codegen::MoeConfig& config, const MoeLayerOptions& options, const MoeForwardArgs& a) {
  if (a.tokens < 1 || a.tokens > config.token_capacity)
    throw InvalidInput("tokens", fmt::format("tokens B = {} is outside the allowed range [1, {}] (token capacity)",
                                             a.tokens, config.token_capacity));
  auto pointer = [](const char* field, CUdeviceptr p, unsigned alignment) {
    if (p == 0 || p % alignment != 0)
      throw InvalidInput(field, fmt::format("{} = 0x{:x} is invalid: must be a non-null {}-byte aligned device "
                                            "pointer",
                                            field, p, alignment));
  };
  if (options.input_bf16) {
    pointer("x_bf16", a.x_bf16, 16);
  } else {
    pointer("x_q", a.x_q, 16);
    pointer("x_scales", a.x_scales, 4);
  }
  pointer("topk_ids", a.topk_ids, 4);
  pointer("topk_weights", a.topk_weights, 4);
  pointer("y", a.y, 16);
}

void validate_route_ids(const codegen::MoeConfig& config, const std::vector<std::int32_t>& ids) {
  for (std::size_t i = 0; i < ids.size(); ++i)
    if (ids[i] < 0 || ids[i] >= config.local_experts())
      throw InvalidInput("topk_ids", fmt::format("topk_ids[{}][{}] = {} is outside the allowed range [0, {})",
                                                 i / config.top_k, i % config.top_k, ids[i], config.local_experts()));
}

}  // namespace moejit::runtime
