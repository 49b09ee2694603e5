// MoeLayer: construction (weight transform, descriptors), the per-shape
// kernels, the per-stream workspaces and the role graphs.
#include "runtime/moe_layer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "runtime/kernel_cache.hpp"
#include "runtime/residency.hpp"
#include "runtime/tensor_map_cache.hpp"

namespace moejit::runtime {

struct MoeLayer::RoleKernels {
  codegen::MoeKernelShape shape;
  std::unique_ptr<LoadedKernel> dispatch, compute, finalize;
  std::string dispatch_key, compute_key, finalize_key;  // kernel cache keys: the cubins' identity
  unsigned compute_grid = 0;
  unsigned compute_smem = 0;
};

// Graphs a stream keeps by argument set before it drops them all; engines
// reuse a few static buffers, so this only bounds callers that do not.
constexpr std::size_t k_max_graphs_per_stream = 256;

struct MoeLayer::StreamState {
  DeviceBuffer workspace;
  std::vector<CUdeviceptr> ws;  // the workspace formals
  std::unordered_map<LaunchKey, std::shared_ptr<RoleGraph>, LaunchKeyHash> graphs;
};

namespace {
struct Loaded {
  std::unique_ptr<LoadedKernel> kernel;
  std::string key;
};

// Through the kernel cache: a spec seen before costs a hash-map lookup, a new
// one a disk hit or a build that is then published for every later process.
Loaded load(const codegen::KernelSpec& spec) {
  const std::shared_ptr<const CachedKernel> kernel = KernelCache::global().get_or_build(spec);
  return {std::make_unique<LoadedKernel>(kernel->cubin, spec.entry_name()), kernel->key};
}
}  // namespace

std::size_t MoeLayer::LaunchKeyHash::operator()(const LaunchKey& k) const noexcept {
  std::size_t h = std::hash<int>{}(k.tokens);
  for (CUdeviceptr p : {k.x_q, k.x_scales, k.x_bf16, k.topk_ids, k.topk_weights, k.y})
    h ^= std::hash<CUdeviceptr>{}(p) + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
  return h;
}

MoeLayer::MoeLayer(const codegen::MoeConfig& config, const CheckpointWeightsDevice& weights,
                   const MoeLayerOptions& options)
    : config_(config), problem_(problem_of(config)), options_(options) {
  validate_layer_config(config);
  validate_layer_options(options);
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
  MOEJIT_CU(cuCtxGetCurrent, &context_);
  if (!context_) throw std::runtime_error("MoeLayer: no current CUDA context (make the device's context current)");

  const int E = problem.experts, H = problem.hidden, I = problem.intermediate;
  layout_ = MoeWorkspaceLayout::make(E, problem.top_k, H, I, config.token_capacity);
  by_tokens_.assign(config.token_capacity + 1, nullptr);
  MOEJIT_CU(cuStreamCreate, &setup_stream_, CU_STREAM_NON_BLOCKING);

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
    const Loaded kernel = load(codegen::moe_weight_transform_spec(E, p.rows, p.k, p.interleave, target_));
    CUdeviceptr in = p.in, in_scales = p.in_scales, out = p.out, out_scales = p.out_scales, st = status.ptr();
    void* args[] = {&in, &in_scales, &out, &out_scales, &st};
    const std::size_t words = std::size_t(E) * p.rows * p.k / 8;
    const unsigned grid = static_cast<unsigned>(std::min<std::size_t>((words + 255) / 256, 65535));
    kernel.kernel->launch({grid, codegen::k_transform_threads, 0}, nullptr, args);
  }
  int bad_scale = 0;
  MOEJIT_CU(cuCtxSynchronize);
  status.download(&bad_scale, 4);
  if (bad_scale)
    throw InvalidInput("weight scales",
                       "weight scales: a UE8M0 code is above 128 (|w| >= 16); the sm_90a "
                       "dequantization supports codes in [0, 128]");

  w1_map_ = TensorMapCache::global().weight_tile_map(w1_.ptr(), std::uint64_t(E) * (H / 128) * 2 * I);
  w2_map_ = TensorMapCache::global().weight_tile_map(w2_.ptr(), std::uint64_t(E) * (I / 128) * H);
}

MoeLayer::~MoeLayer() {
  // Work still queued on the streams may use the graphs and workspaces that
  // the members' destructors free next (graphs before the kernels they launch).
  if (const DriverApi* api = try_driver()) {
    for (auto& [stream, state] : streams_)
      if (!state->graphs.empty()) api->cuStreamSynchronize(stream);
    if (setup_stream_) api->cuStreamDestroy(setup_stream_);
  }
}

codegen::MoeKernelShape MoeLayer::kernel_shape(int tokens) const {
  return plan_kernel_shape(config_, options_, tokens, profile_);
}

const MoeLayer::RoleKernels& MoeLayer::kernels_for_locked(int tokens) {
  if (const RoleKernels* k = by_tokens_[tokens]) return *k;
  const codegen::MoeKernelShape shape = kernel_shape(tokens);
  const codegen::KernelSpec compute_spec = codegen::moe_compute_spec(shape, target_);
  auto& slot = kernels_[compute_spec.summary()];
  if (!slot) {
    auto k = std::make_unique<RoleKernels>();
    k->shape = shape;
    Loaded dispatch = load(codegen::moe_dispatch_spec(shape, target_)), compute = load(compute_spec),
           finalize = load(codegen::moe_finalize_spec(shape, target_));
    k->dispatch = std::move(dispatch.kernel);
    k->compute = std::move(compute.kernel);
    k->finalize = std::move(finalize.kernel);
    k->dispatch_key = dispatch.key;
    k->compute_key = compute.key;
    k->finalize_key = finalize.key;
    k->compute_smem = static_cast<unsigned>(codegen::compute_smem_bytes(shape));
    CUdevice device = 0;
    MOEJIT_CU(cuDeviceGet, &device, device_.ordinal);
    MOEJIT_CU(cuKernelSetAttribute, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, static_cast<int>(k->compute_smem),
              k->compute->kernel(), device);
    CUfunction fn = nullptr;  // the attribute for this context's function too (direct launches)
    MOEJIT_CU(cuKernelGetFunction, &fn, k->compute->kernel());
    MOEJIT_CU(cuFuncSetAttribute, fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
              static_cast<int>(k->compute_smem));
    // Persistent: every compute CTA resident, so the GEMM2 waits on GEMM1
    // counters cannot deadlock. The planned grid fills the SMs; an override must fit.
    const int sms = device_.sm_count;
    const int per_sm = role_blocks_per_sm(*k->compute, codegen::k_compute_threads, static_cast<int>(k->compute_smem));
    k->compute_grid = static_cast<unsigned>(options_.compute_grid > 0 ? options_.compute_grid : per_sm * sms);
    require_residency("compute", k->compute_grid, per_sm, sms, codegen::k_compute_threads,
                      static_cast<int>(k->compute_smem), true);
    require_residency("dispatch", 1, role_blocks_per_sm(*k->dispatch, codegen::k_dispatch_threads, 0), sms,
                      codegen::k_dispatch_threads, 0, false);
    require_residency("finalize", 1, role_blocks_per_sm(*k->finalize, codegen::k_finalize_threads, 0), sms,
                      codegen::k_finalize_threads, 0, false);
    slot = std::move(k);
  }
  by_tokens_[tokens] = slot.get();
  return *slot;
}

int MoeLayer::kernels_built() const {
  std::lock_guard lock(mutex_);
  return static_cast<int>(kernels_.size());
}

MoeLayer::GraphCounters MoeLayer::graph_counters() const {
  std::lock_guard lock(mutex_);
  return graph_counters_;
}

CUdeviceptr MoeLayer::workspace(CUstream stream) const {
  std::lock_guard lock(mutex_);
  const auto it = streams_.find(stream);
  return it == streams_.end() ? 0 : it->second->workspace.ptr();
}

void MoeLayer::release_stream(CUstream stream) {
  std::lock_guard lock(mutex_);
  const auto it = streams_.find(stream);
  if (it == streams_.end()) return;
  MOEJIT_CU(cuStreamSynchronize, stream);
  streams_.erase(it);
  std::erase_if(graphs_, [](const auto& g) { return g.second.use_count() == 1; });
}

MoeLayer::StreamState& MoeLayer::stream_state_locked(CUstream stream) {
  auto& slot = streams_[stream];
  if (!slot) {
    auto st = std::make_unique<StreamState>();
    st->workspace = DeviceBuffer(layout_.total);
    // Zero once: the counters are monotone from here on. On the setup stream,
    // which never joins the caller's capture.
    MOEJIT_CU(cuMemsetD8Async, st->workspace.ptr(), 0, layout_.total, setup_stream_);
    MOEJIT_CU(cuStreamSynchronize, setup_stream_);
    st->ws = layout_.pointers(st->workspace.ptr());
    slot = std::move(st);
  }
  return *slot;
}

std::vector<RoleLaunch> MoeLayer::role_launches(const RoleKernels& k, const MoeForwardArgs& a,
                                                const StreamState& st) const {
  const int H = problem_.hidden;
  const unsigned tokens = static_cast<unsigned>(a.tokens);
  std::vector<RoleLaunch> roles(3);

  // Dispatch: block 0 routes, the others prepare activation rows (16 or 32 elements a thread).
  const std::size_t rows_work = std::size_t(a.tokens) * H / (options_.input_bf16 ? 32 : 16);
  const unsigned dispatch_grid =
      1 + static_cast<unsigned>((rows_work + codegen::k_dispatch_threads - 1) / codegen::k_dispatch_threads);
  roles[0].role = "dispatch";
  roles[0].kernel = k.dispatch.get();
  roles[0].cubin_key = k.dispatch_key;
  roles[0].dims = {dispatch_grid, codegen::k_dispatch_threads, 0};
  roles[0].args.add(a.topk_ids).add(a.x_q).add(a.x_scales).add(a.x_bf16).add(tokens).add_all(st.ws);

  // The maps go by value: tensormap-by-value made them 128-byte formals of the compute cubin.
  roles[1].role = "compute";
  roles[1].kernel = k.compute.get();
  roles[1].cubin_key = k.compute_key;
  roles[1].dims = {k.compute_grid, codegen::k_compute_threads, k.compute_smem};
  roles[1].args.add(w1_map_).add(w2_map_).add(s1_.ptr()).add(s2_.ptr()).add(a.topk_weights).add(problem_.clamp);
  roles[1].args.add_all(st.ws);

  const std::size_t chunks = std::size_t(a.tokens) * H / 8;
  roles[2].role = "finalize";
  roles[2].kernel = k.finalize.get();
  roles[2].cubin_key = k.finalize_key;
  roles[2].dims = {static_cast<unsigned>((chunks + codegen::k_finalize_threads - 1) / codegen::k_finalize_threads),
                   codegen::k_finalize_threads, 0};
  roles[2].args.add(a.y).add(tokens).add_all(st.ws);
  return roles;
}

std::shared_ptr<RoleGraph> MoeLayer::graph_for(const MoeForwardArgs& a, CUstream stream, bool capturing) {
  const LaunchKey key{a.tokens, a.x_q, a.x_scales, a.x_bf16, a.topk_ids, a.topk_weights, a.y};
  std::lock_guard lock(mutex_);
  if (auto s = streams_.find(stream); s != streams_.end())
    if (auto it = s->second->graphs.find(key); it != s->second->graphs.end()) {
      ++graph_counters_.warm_hits;
      return it->second;
    }
  // Cold: may compile, allocate and synchronize the setup stream, all of
  // which a capture in global mode would refuse.
  RelaxedCaptureScope relaxed(capturing);
  StreamState& st = stream_state_locked(stream);
  const RoleKernels& k = kernels_for_locked(a.tokens);
  std::vector<RoleLaunch> roles = role_launches(k, a, st);
  std::shared_ptr<RoleGraph>& graph = graphs_[role_graph_key(roles, options_.pdl)];
  if (graph) {
    ++graph_counters_.reused;
  } else {
    graph = std::make_shared<RoleGraph>(roles, context_, options_.pdl);
    ++graph_counters_.built;
  }
  if (st.graphs.size() >= k_max_graphs_per_stream && !capturing) {
    // Their execs may still be running on this stream.
    MOEJIT_CU(cuStreamSynchronize, stream);
    st.graphs.clear();
    std::erase_if(graphs_, [&](const auto& g) { return g.second.use_count() == 1 && g.second != graph; });
  }
  st.graphs.emplace(key, graph);
  return graph;
}

void MoeLayer::check_routes(const MoeForwardArgs& a, bool capturing) const {
  if (capturing)
    throw InvalidInput("check_routes_on_host",
                       "check_routes_on_host = true cannot be used while the stream is capturing (it copies topk_ids "
                       "to the host); turn it off: out-of-range ids poison their token with NaN on the GPU");
  std::vector<std::int32_t> ids(std::size_t(a.tokens) * problem_.top_k);
  MOEJIT_CU(cuMemcpyDtoH, ids.data(), a.topk_ids, ids.size() * 4);
  validate_route_ids(config_, ids);
}

void MoeLayer::forward(const MoeForwardArgs& a, CUstream stream, const RoleEvents* events) {
  validate_forward_args(config_, options_, a);
  const bool capturing = stream_is_capturing(stream);
  if (options_.check_routes_on_host) check_routes(a, capturing);

  if (events || !options_.use_graphs) {
    std::vector<RoleLaunch> roles;
    {
      std::lock_guard lock(mutex_);
      RelaxedCaptureScope relaxed(capturing);
      roles = role_launches(kernels_for_locked(a.tokens), a, stream_state_locked(stream));
    }
    if (!events) return launch_roles(roles, stream, options_.pdl);
    const CUevent marks[3] = {events->start, events->dispatched, events->computed};
    for (std::size_t i = 0; i < roles.size(); ++i) {
      MOEJIT_CU(cuEventRecord, marks[i], stream);
      roles[i].kernel->launch_ex(roles[i].dims, stream, roles[i].args.pointers(), false);
    }
    MOEJIT_CU(cuEventRecord, events->finalized, stream);
    return;
  }

  const std::shared_ptr<RoleGraph> graph = graph_for(a, stream, capturing);
  if (capturing)
    graph->attach(stream);
  else
    graph->launch(stream);
}

}  // namespace moejit::runtime
