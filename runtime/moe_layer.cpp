#include "runtime/moe_layer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "codegen/planner.hpp"
#include "runtime/kernel_builder.hpp"
#include "runtime/kernel_cache.hpp"

namespace moejit::runtime {

struct MoeLayer::RoleKernels {
  codegen::MoeKernelShape shape;
  std::unique_ptr<LoadedKernel> dispatch, compute, finalize;
  unsigned compute_grid = 0;
  unsigned compute_smem = 0;
};

namespace {
// Through the kernel cache: a spec seen before costs a hash-map lookup, a new
// one a disk hit or a build that is then published for every later process.
std::unique_ptr<LoadedKernel> load(const codegen::KernelSpec& spec) {
  const std::shared_ptr<const CachedKernel> kernel = KernelCache::global().get_or_build(spec);
  return std::make_unique<LoadedKernel>(kernel->cubin, spec.entry_name());
}

}  // namespace

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

MoeLayer::MoeLayer(const codegen::MoeConfig& config, const CheckpointWeightsDevice& weights,
                   const MoeLayerOptions& options)
    : config_(config), problem_(problem_of(config)), options_(options) {
  validate_layer_config(config);
  const reference::MoeProblem& problem = problem_;
  device_ = query_device(options.device);
  profile_ = device_profile(device_);
  const auto target = codegen::parse_target(device_.target_name());
  if (!target || target->arch != codegen::Arch::sm_90a)
    throw std::runtime_error(fmt::format("MoeLayer runs on sm_90a GPUs; GPU {} is {} (sm_{}{})", options.device,
                                         device_.name, device_.cc_major, device_.cc_minor));
  target_ = *target;
  for (auto [name, ptr] : {std::pair{"w1", weights.w1}, {"s1", weights.s1}, {"w2", weights.w2}, {"s2", weights.s2}})
    if (ptr == 0 || ptr % 16 != 0)
      throw InvalidInput(name, fmt::format("weights.{} = 0x{:x} is invalid: must be a non-null 16-byte aligned "
                                           "device pointer",
                                           name, ptr));

  const int E = problem.experts, H = problem.hidden, I = problem.intermediate;
  layout_ = MoeWorkspaceLayout::make(E, problem.top_k, H, I, config.token_capacity);
  workspace_ = DeviceBuffer(layout_.total);
  MOEJIT_CU(cuMemsetD8, workspace_.ptr(), 0, layout_.total);
  by_tokens_.assign(config.token_capacity + 1, nullptr);

  // Pack both projections with the JIT weight transform.
  const std::size_t w1_bytes = std::size_t(E) * 2 * I * H / 2, w2_bytes = std::size_t(E) * H * I / 2;
  w1_ = DeviceBuffer(w1_bytes);
  s1_ = DeviceBuffer(w1_bytes / 16);
  w2_ = DeviceBuffer(w2_bytes);
  s2_ = DeviceBuffer(w2_bytes / 16);
  DeviceBuffer status(4);
  MOEJIT_CU(cuMemsetD8, status.ptr(), 0, 4);
  struct Projection {
    int rows, k;
    bool interleave;
    CUdeviceptr in, in_scales, out, out_scales;
  };
  for (const Projection& p : {Projection{2 * I, H, true, weights.w1, weights.s1, w1_.ptr(), s1_.ptr()},
                              Projection{H, I, false, weights.w2, weights.s2, w2_.ptr(), s2_.ptr()}}) {
    const auto kernel = load(codegen::moe_weight_transform_spec(E, p.rows, p.k, p.interleave, target_));
    CUdeviceptr in = p.in, in_scales = p.in_scales, out = p.out, out_scales = p.out_scales, st = status.ptr();
    void* args[] = {&in, &in_scales, &out, &out_scales, &st};
    const std::size_t words = std::size_t(E) * p.rows * p.k / 8;
    const unsigned grid = static_cast<unsigned>(std::min<std::size_t>((words + 255) / 256, 65535));
    kernel->launch({grid, codegen::k_transform_threads, 0}, nullptr, args);
  }
  int bad_scale = 0;
  MOEJIT_CU(cuCtxSynchronize);
  status.download(&bad_scale, 4);
  if (bad_scale)
    throw InvalidInput("weight scales",
                       "weight scales: a UE8M0 code is above 128 (|w| >= 16); the sm_90a "
                       "dequantization supports codes in [0, 128]");

  w1_map_ = encode_weight_tile_map(w1_.ptr(), std::uint64_t(E) * (H / 128) * 2 * I);
  w2_map_ = encode_weight_tile_map(w2_.ptr(), std::uint64_t(E) * (I / 128) * H);
}

MoeLayer::~MoeLayer() = default;

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

codegen::MoeKernelShape MoeLayer::kernel_shape(int tokens) const {
  return plan_kernel_shape(config_, options_, tokens, profile_);
}

const MoeLayer::RoleKernels& MoeLayer::kernels_for(int tokens) {
  std::lock_guard lock(mutex_);
  if (const RoleKernels* k = by_tokens_[tokens]) return *k;
  const codegen::MoeKernelShape shape = kernel_shape(tokens);
  const codegen::KernelSpec compute_spec = codegen::moe_compute_spec(shape, target_);
  auto& slot = kernels_[compute_spec.summary()];
  if (!slot) {
    auto k = std::make_unique<RoleKernels>();
    k->shape = shape;
    k->dispatch = load(codegen::moe_dispatch_spec(shape, target_));
    k->compute = load(compute_spec);
    k->finalize = load(codegen::moe_finalize_spec(shape, target_));
    k->compute_smem = static_cast<unsigned>(codegen::compute_smem_bytes(shape));
    CUfunction fn = nullptr;
    MOEJIT_CU(cuKernelGetFunction, &fn, k->compute->kernel());
    MOEJIT_CU(cuFuncSetAttribute, fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
              static_cast<int>(k->compute_smem));
    int per_sm = 0;
    MOEJIT_CU(cuOccupancyMaxActiveBlocksPerMultiprocessor, &per_sm, fn, codegen::k_compute_threads, k->compute_smem);
    if (per_sm < 1)
      throw std::runtime_error(fmt::format("compute role: {} threads with {} bytes of SMEM cannot be resident",
                                           codegen::k_compute_threads, k->compute_smem));
    // Persistent: every CTA resident, so the GEMM2 waits on GEMM1 counters cannot deadlock.
    k->compute_grid = static_cast<unsigned>(per_sm * device_.sm_count);
    slot = std::move(k);
  }
  by_tokens_[tokens] = slot.get();
  return *slot;
}

int MoeLayer::kernels_built() const {
  std::lock_guard lock(mutex_);
  return static_cast<int>(kernels_.size());
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

void MoeLayer::validate(const MoeForwardArgs& a) const {
  validate_forward_args(config_, options_, a);
  if (options_.check_routes_on_host) {
    std::vector<std::int32_t> ids(std::size_t(a.tokens) * problem_.top_k);
    MOEJIT_CU(cuMemcpyDtoH, ids.data(), a.topk_ids, ids.size() * 4);
    validate_route_ids(config_, ids);
  }
}

void MoeLayer::forward(const MoeForwardArgs& a, CUstream stream, const RoleEvents* events) {
  validate(a);
  const RoleKernels& k = kernels_for(a.tokens);
  std::vector<CUdeviceptr> ws = layout_.pointers(workspace_.ptr());
  std::vector<void*> ws_args;
  for (CUdeviceptr& p : ws) ws_args.push_back(&p);
  auto with_ws = [&](std::vector<void*> args) {
    args.insert(args.end(), ws_args.begin(), ws_args.end());
    return args;
  };
  const int H = problem_.hidden;
  unsigned tokens = static_cast<unsigned>(a.tokens);
  CUdeviceptr ids = a.topk_ids, xq = a.x_q, xs = a.x_scales, xb = a.x_bf16, tw = a.topk_weights, y = a.y;

  // Dispatch: block 0 routes, the others prepare activation rows (16 or 32 elements a thread).
  const std::size_t rows_work = std::size_t(a.tokens) * H / (options_.input_bf16 ? 32 : 16);
  const unsigned dispatch_grid =
      1 + static_cast<unsigned>((rows_work + codegen::k_dispatch_threads - 1) / codegen::k_dispatch_threads);
  auto dispatch_args = with_ws({&ids, &xq, &xs, &xb, &tokens});
  if (events) MOEJIT_CU(cuEventRecord, events->start, stream);
  k.dispatch->launch({dispatch_grid, codegen::k_dispatch_threads, 0}, stream, dispatch_args.data());

  // The maps go by value: tensormap-by-value made them 128-byte formals of the compute cubin.
  TensorMapBlob w1_map = w1_map_, w2_map = w2_map_;
  CUdeviceptr s1 = s1_.ptr(), s2 = s2_.ptr();
  float clamp = problem_.clamp;
  auto compute_args = with_ws({&w1_map, &w2_map, &s1, &s2, &tw, &clamp});
  if (events) MOEJIT_CU(cuEventRecord, events->dispatched, stream);
  k.compute->launch({k.compute_grid, codegen::k_compute_threads, k.compute_smem}, stream, compute_args.data());

  const std::size_t chunks = std::size_t(a.tokens) * H / 8;
  const unsigned finalize_grid =
      static_cast<unsigned>((chunks + codegen::k_finalize_threads - 1) / codegen::k_finalize_threads);
  auto finalize_args = with_ws({&y, &tokens});
  if (events) MOEJIT_CU(cuEventRecord, events->computed, stream);
  k.finalize->launch({finalize_grid, codegen::k_finalize_threads, 0}, stream, finalize_args.data());
  if (events) MOEJIT_CU(cuEventRecord, events->finalized, stream);
}

}  // namespace moejit::runtime
