#include "runtime/role_graph.hpp"

#include <fmt/format.h>

#include <stdexcept>

#include "cache/sha256.hpp"

namespace moejit::runtime {

std::string role_graph_key(const std::vector<RoleLaunch>& roles, bool programmatic) {
  cache::Sha256 h;
  h.field("moejit-role-graph-v1");
  h.field(programmatic ? "programmatic" : "full");
  for (const RoleLaunch& r : roles) {
    h.field(r.role);
    h.field(r.cubin_key);
    h.field(fmt::format("{}/{}/{}", r.dims.dynamic_smem, r.dims.block, r.dims.grid));
    h.field(r.args.bytes());
  }
  return h.hex();
}

// A forward's first role is never programmatic, so it starts after the previous forward's last grid has ended:
// the compute role reads the workspace's epoch and readiness counters before any griddepcontrol.wait, and on the
// unit schedule the finalize grid is what resets them (moe_finalize.cuh, end_forward). RoleGraph's first node
// likewise has no programmatic edge.
void launch_roles(std::vector<RoleLaunch>& roles, CUstream stream, bool programmatic) {
  for (std::size_t i = 0; i < roles.size(); ++i)
    roles[i].kernel->launch_ex(roles[i].dims, stream, roles[i].args.pointers(), programmatic && i > 0);
}

RoleGraph::RoleGraph(std::vector<RoleLaunch>& roles, CUcontext ctx, bool programmatic) {
  MOEJIT_CU(cuGraphCreate, &graph_, 0);
  try {
    CUgraphNode previous = nullptr;
    for (RoleLaunch& r : roles) {
      CUDA_KERNEL_NODE_PARAMS p{};
      p.func = nullptr;  // a library kernel goes by `kern` and an explicit `ctx`
      p.kern = r.kernel->kernel();
      p.ctx = ctx;
      p.gridDimX = r.dims.grid;
      p.gridDimY = p.gridDimZ = 1;
      p.blockDimX = r.dims.block;
      p.blockDimY = p.blockDimZ = 1;
      p.sharedMemBytes = r.dims.dynamic_smem;
      p.kernelParams = r.args.pointers();
      CUgraphNode node = nullptr;
      MOEJIT_CU(cuGraphAddKernelNode, &node, graph_, nullptr, 0, &p);
      if (previous) {
        CUgraphEdgeData edge{};
        if (programmatic) {
          edge.from_port = CU_GRAPH_KERNEL_NODE_PORT_PROGRAMMATIC;
          edge.type = CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC;
        }
        MOEJIT_CU(cuGraphAddDependencies, graph_, &previous, &node, &edge, 1);
      }
      previous = node;
    }
  } catch (...) {
    driver().cuGraphDestroy(graph_);
    throw;
  }
}

RoleGraph::~RoleGraph() {
  if (const DriverApi* api = try_driver()) {
    if (exec_) api->cuGraphExecDestroy(exec_);
    if (graph_) api->cuGraphDestroy(graph_);
  }
}

void RoleGraph::instantiate() {
  const std::lock_guard lock(mutex_);
  if (!exec_) MOEJIT_CU(cuGraphInstantiateWithFlags, &exec_, graph_, 0);
}

void RoleGraph::launch(CUstream stream) {
  const std::lock_guard lock(mutex_);
  if (!exec_) throw std::logic_error("RoleGraph::launch: the graph was never instantiated");
  MOEJIT_CU(cuGraphLaunch, exec_, stream);
}

void RoleGraph::attach(CUstream stream) {
  const std::lock_guard lock(mutex_);
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  CUgraph capture = nullptr;
  const CUgraphNode* deps = nullptr;
  const CUgraphEdgeData* edges = nullptr;
  std::size_t n = 0;
  MOEJIT_CU(cuStreamGetCaptureInfo, stream, &status, nullptr, &capture, &deps, &edges, &n);
  if (status != CU_STREAM_CAPTURE_STATUS_ACTIVE)
    throw std::runtime_error("RoleGraph::attach: the stream is not capturing");
  // The incoming edges become full dependencies: the dispatch role must see
  // everything the caller's earlier work wrote (x, topk_ids).
  CUgraphNode node = nullptr;
  MOEJIT_CU(cuGraphAddChildGraphNode, &node, capture, deps, n, graph_);
  MOEJIT_CU(cuStreamUpdateCaptureDependencies, stream, &node, nullptr, 1, CU_STREAM_SET_CAPTURE_DEPENDENCIES);
}

bool stream_is_capturing(CUstream stream) {
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  MOEJIT_CU(cuStreamIsCapturing, stream, &status);
  if (status == CU_STREAM_CAPTURE_STATUS_INVALIDATED)
    throw std::runtime_error("forward: the stream's capture was invalidated by an earlier call");
  return status == CU_STREAM_CAPTURE_STATUS_ACTIVE;
}

RelaxedCaptureScope::RelaxedCaptureScope(bool active) : active_(active) {
  if (active_) MOEJIT_CU(cuThreadExchangeStreamCaptureMode, &previous_);
}

RelaxedCaptureScope::~RelaxedCaptureScope() {
  if (active_) driver().cuThreadExchangeStreamCaptureMode(&previous_);
}

}  // namespace moejit::runtime
