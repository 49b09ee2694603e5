// MoeLayer: its setup, each B's plan, the per-stream workspaces, the role
// graphs and the forward (its weights: moe_layer_weights.cpp; its kernels for each B and
// their arguments: moe_layer_kernels.cpp; the forward's checks against the
// driver: moe_layer_checks.cpp). What launches is the launch plan
// (codegen/moe_launch_plan.hpp), exactly.
#include "runtime/moe_layer.hpp"

#include <fmt/format.h>

#include <optional>
#include <vector>

#include "runtime/moe_layer_detail.hpp"

namespace moejit::runtime {

// Graphs a stream keeps by argument set before it drops them all; engines
// reuse a few static buffers, so this only bounds callers that do not.
constexpr std::size_t k_max_graphs_per_stream = 256;

struct MoeLayer::StreamState {
  DeviceBuffer workspace;
  bool captured = false;  // a capture on this stream holds the workspace's address in the caller's graph
  LaunchKey checked{};    // the eager forward arguments check_forward_buffers last passed (tokens 0: none)
  std::unordered_map<LaunchKey, std::shared_ptr<RoleGraph>, LaunchKeyHash> graphs;
};

namespace {
// A layer keeps one workspace per stream handle; CU_STREAM_PER_THREAD is one handle for a different stream in each
// thread, whose concurrent forwards would share a workspace.
void require_stream_handle(CUstream stream) {
  if (stream == CU_STREAM_PER_THREAD)
    throw InvalidInput("stream",
                       "stream = CU_STREAM_PER_THREAD (cudaStreamPerThread) is invalid: it names a different stream in "
                       "each thread, and a layer keeps one workspace per stream handle; pass a stream of your own, or "
                       "0 (the legacy default stream)");
}

// The layer's context made current for a call from a thread whose current context is another GPU's, or none (a
// torch thread on another device, a fresh thread): its first forward on a stream allocates and loads in the
// current context, which must be the layer's. What was current comes back at the end. A thread already on the
// layer's GPU (any context of it: green-context partitions) keeps its own.
class LayerContextScope {
 public:
  LayerContextScope(CUcontext layer, CUdevice device) {
    MOEJIT_CU(cuCtxGetCurrent, &previous_);
    if (previous_ == layer) return;  // the common case: one driver call
    CUdevice current = 0;
    if (previous_ && driver().cuCtxGetDevice(&current) == CUDA_SUCCESS && current == device) return;
    MOEJIT_CU(cuCtxSetCurrent, layer);
    switched_ = true;
  }
  ~LayerContextScope() {
    if (switched_) driver().cuCtxSetCurrent(previous_);
  }
  LayerContextScope(const LayerContextScope&) = delete;
  LayerContextScope& operator=(const LayerContextScope&) = delete;

 private:
  CUcontext previous_ = nullptr;
  bool switched_ = false;
};
}  // namespace

std::size_t MoeLayer::LaunchKeyHash::operator()(const LaunchKey& k) const noexcept {
  std::size_t h = std::hash<int>{}(k.tokens);
  for (CUdeviceptr p : {k.x_q, k.x_scales, k.x_bf16, k.topk_ids, k.topk_weights, k.y, k.workspace, k.trace})
    h ^= std::hash<CUdeviceptr>{}(p) + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
  return h;
}

MoeLayer::MoeLayer(const codegen::MoeConfig& config, const MoeLayerOptions& options, Setup)
    : config_(config), options_(options) {
  validate_layer_config(config);
  validate_layer_options(options);
  device_ = query_device(options.device);  // an ordinal the machine lacks: InvalidInput("device")
  profile_ = device_profile(device_);
  if (options.sm_count > device_.sm_count)
    throw InvalidInput("sm_count",
                       fmt::format("sm_count = {} is outside the allowed range [0, {}] (0: the {}'s {} SMs)",
                                   options.sm_count, device_.sm_count, device_.name, device_.sm_count));
  if (options.sm_count) profile_.sm_count = options.sm_count;
  const auto target = codegen::parse_target(device_.target_name());
  if (!target || target->arch != codegen::Arch::sm_90a)
    throw std::runtime_error(fmt::format("MoeLayer runs on sm_90a GPUs; GPU {} is {} (sm_{}{})", options.device,
                                         device_.name, device_.cc_major, device_.cc_minor));
  target_ = *target;
  // The layer holds the resolved path: its weights are packed for that atom.
  options_.codegen.path = codegen::resolve_path(options.codegen.path, target_.arch, config_.recipe);
  // W4A16 has one input format: BF16 x (the planner implies it the same way).
  if (config_.recipe == codegen::Recipe::w4a16) options_.codegen.input_bf16 = true;
  atom_ = codegen::find_atom(target_, *options_.codegen.path, config.recipe);
  if (!atom_)
    throw InvalidInput("path", fmt::format("path = {} is not available on {}",
                                           codegen::path_name(*options_.codegen.path), target_.name()));
  MOEJIT_CU(cuCtxGetCurrent, &context_);
  if (!context_) throw std::runtime_error("MoeLayer: no current CUDA context (make the device's context current)");
  // Everything the layer allocates and loads goes to the current context: it must be options.device's, or the
  // weights would be read across GPUs.
  CUdevice current = 0;
  MOEJIT_CU(cuCtxGetDevice, &current);
  MOEJIT_CU(cuDeviceGet, &cu_device_, options.device);
  if (current != cu_device_)
    throw InvalidInput("device", fmt::format("device = {} is not the device of the current CUDA context: make GPU "
                                             "{}'s context current before building its layer",
                                             options.device, options.device));

  // Every plan of this layer has the same grid, so one workspace size serves every batch.
  const codegen::MoeLaunchPlan first = plan(1);
  workspace_bytes_ = first.workspace_bytes;
  workspace_ep_ = first.ep.mode & contract::kEpLayoutModes;  // the same at every B, as the bytes are
  by_tokens_.resize(config.token_capacity + 1);
  // Blocking: the weight transforms must follow a caller's synchronous cuMemcpyHtoD of the weights, whose DMA
  // from pageable memory may still be in flight on the legacy stream when it returns. Its work never waits for
  // another blocking stream, so another thread's capture is not joined.
  MOEJIT_CU(cuStreamCreate, &setup_stream_, CU_STREAM_DEFAULT);
}

MoeLayer::~MoeLayer() {
  // Work still queued on the streams may use the graphs and workspaces that
  // the members' destructors free next (graphs before the kernels they launch).
  if (const DriverApi* api = try_driver()) {
    for (auto& [stream, state] : streams_) api->cuStreamSynchronize(stream);  // eager launches use workspaces too
    if (setup_stream_) {  // a constructor that threw may leave its setup work running
      api->cuStreamSynchronize(setup_stream_);
      api->cuStreamDestroy(setup_stream_);
    }
  }
}

codegen::MoeLaunchPlan MoeLayer::plan(int tokens) const {
  codegen::MoeLaunchPlan p = codegen::plan_launch(config_, tokens, profile_, options_.codegen);
  codegen::override_pdl(p, options_.pdl);
  return p;
}

contract::WorkspaceLayout MoeLayer::workspace_layout() const {
  return contract::workspace_layout(codegen::workspace_dims(config_, atom_->contract_path, workspace_ep_));
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
  const LayerContextScope scope(context_, cu_device_);
  std::lock_guard lock(mutex_);
  const auto it = streams_.find(stream);
  if (it == streams_.end()) return;
  MOEJIT_CU(cuStreamSynchronize, stream);
  // A graph the caller captured on this stream replays on any stream, later, with this workspace's address in it.
  if (it->second->captured && it->second->workspace.ptr())
    retired_workspaces_.push_back(std::move(it->second->workspace));
  streams_.erase(it);
  std::erase_if(graphs_, [](const auto& g) { return g.second.use_count() == 1; });
}

MoeLayer::StreamState& MoeLayer::stream_state_locked(CUstream stream, bool capturing) {
  auto& slot = streams_[stream];
  if (!slot) slot = std::make_unique<StreamState>();
  slot->captured |= capturing;
  return *slot;
}

CUdeviceptr MoeLayer::workspace_for_locked(const MoeForwardArgs& a, StreamState& st) {
  if (a.workspace) {
    check_caller_workspace(a.workspace);
    return a.workspace;
  }
  if (!st.workspace.ptr()) {
    DeviceBuffer fresh(static_cast<std::size_t>(workspace_bytes_));
    // Zero once: the header's epoch and the GEMM2 readiness counters start
    // clean, and every forward leaves them clean. On the setup stream, which
    // never joins the caller's capture. Kept only once zeroed: a failure here
    // must not leave a dirty workspace that the next forward takes for a clean one.
    MOEJIT_CU(cuMemsetD8Async, fresh.ptr(), 0, fresh.bytes(), setup_stream_);
    MOEJIT_CU(cuStreamSynchronize, setup_stream_);
    st.workspace = std::move(fresh);
  }
  return st.workspace.ptr();
}

MoeLayer::LaunchKey MoeLayer::launch_key(const MoeForwardArgs& a) {
  return {a.tokens, a.x_q, a.x_scales, a.x_bf16, a.topk_ids, a.topk_weights, a.y, a.workspace, a.trace};
}

std::shared_ptr<RoleGraph> MoeLayer::graph_for(const MoeForwardArgs& a, CUstream stream, bool capturing) {
  const LaunchKey key = launch_key(a);
  std::unique_lock lock(mutex_);
  auto warm = [&]() -> std::shared_ptr<RoleGraph> {
    if (auto s = streams_.find(stream); s != streams_.end())
      if (auto it = s->second->graphs.find(key); it != s->second->graphs.end()) {
        ++graph_counters_.warm_hits;
        s->second->captured |= capturing;
        if (!capturing && !it->second->instantiated()) {  // built under a capture, launched eagerly now
          const RelaxedCaptureScope relaxed(true);
          it->second->instantiate();
        }
        return it->second;
      }
    return nullptr;
  };
  if (std::shared_ptr<RoleGraph> g = warm()) return g;
  if (!by_tokens_[a.tokens]) {
    lock.unlock();
    build_kernels_unlocked(a.tokens);
    lock.lock();
    if (std::shared_ptr<RoleGraph> g = warm()) return g;  // another thread's forward of these arguments built it
  }
  // Cold: may compile, allocate and synchronize the setup stream, all of
  // which a capture in global mode would refuse, this thread's or another's.
  const RelaxedCaptureScope relaxed(true);
  StreamState& st = stream_state_locked(stream, capturing);
  const TokenLaunch& t = kernels_for_locked(a.tokens);
  check_forward_buffers(a);
  std::vector<RoleLaunch> roles = role_launches(t, a, workspace_for_locked(a, st));
  const bool pdl = pdl_for(t);
  std::shared_ptr<RoleGraph>& graph = graphs_[role_graph_key(roles, pdl)];
  if (graph) {
    ++graph_counters_.reused;
  } else {
    graph = std::make_shared<RoleGraph>(roles, context_, pdl);
    ++graph_counters_.built;
  }
  if (!capturing) graph->instantiate();
  if (st.graphs.size() >= k_max_graphs_per_stream && !capturing) {
    // Their execs may still be running on this stream.
    MOEJIT_CU(cuStreamSynchronize, stream);
    st.graphs.clear();
    std::erase_if(graphs_, [&](const auto& g) { return g.second.use_count() == 1 && g.second != graph; });
  }
  st.graphs.emplace(key, graph);
  return graph;
}

std::vector<RoleLaunch> MoeLayer::launches(const MoeForwardArgs& a, CUstream stream) {
  validate_forward_args(config_, options_, a);
  require_stream_handle(stream);
  const LayerContextScope scope(context_, cu_device_);
  build_kernels_unlocked(a.tokens);
  std::lock_guard lock(mutex_);
  const RelaxedCaptureScope relaxed(true);  // as graph_for's cold path
  check_forward_buffers(a);
  return role_launches(kernels_for_locked(a.tokens), a, workspace_for_locked(a, stream_state_locked(stream, false)));
}

void MoeLayer::forward(const MoeForwardArgs& a, CUstream stream, const RoleEvents* events) {
  validate_forward_args(config_, options_, a);
  require_stream_handle(stream);
  const LayerContextScope scope(context_, cu_device_);
  const bool capturing = stream_is_capturing(stream);
  if (options_.check_routes_on_host) check_routes(a, stream, capturing);

  if (events || !options_.use_graphs) {
    build_kernels_unlocked(a.tokens);
    std::vector<RoleLaunch> roles;
    bool pdl = false;
    {
      std::lock_guard lock(mutex_);
      const LaunchKey key = launch_key(a);
      // A forward of arguments this stream ran before (kernels loaded, workspace allocated, buffers checked) makes
      // no call that a capture would refuse; a cold one relaxes the mode, as graph_for's cold path does.
      const auto known = streams_.find(stream);
      const bool warm =
          known != streams_.end() && known->second->checked == key && (a.workspace || known->second->workspace.ptr());
      std::optional<RelaxedCaptureScope> relaxed;
      if (capturing || !warm) relaxed.emplace(true);
      const TokenLaunch& t = kernels_for_locked(a.tokens);
      pdl = pdl_for(t);
      StreamState& st = stream_state_locked(stream, capturing);
      // Once per argument set, as a graph is built once: the driver queries stay off the repeated forward.
      if (!(st.checked == key)) {
        check_forward_buffers(a);
        st.checked = key;
      }
      roles = role_launches(t, a, workspace_for_locked(a, st));
    }
    if (!events) return launch_roles(roles, stream, pdl);
    // start, [dispatch], dispatched, compute, computed, finalize, finalized.
    MOEJIT_CU(cuEventRecord, events->start, stream);
    for (RoleLaunch& r : roles) {
      if (r.role == "compute") MOEJIT_CU(cuEventRecord, events->dispatched, stream);
      if (r.role == "finalize") MOEJIT_CU(cuEventRecord, events->computed, stream);
      r.kernel->launch_ex(r.dims, stream, r.args.pointers(), false);
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
