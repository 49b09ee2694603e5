#pragma once
// The role kernels of one forward as a CUDA graph (seed §5.2).
//
// Kernel nodes are built through the driver API: each carries the CUkernel of
// its library and an explicit context (a graph node cannot hold a CUfunction
// of a library kernel), and its own dynamic SMEM size. The roles form a chain;
// with programmatic edges the next role launches while the previous runs and
// waits for it in griddepcontrol.wait. The graph is instantiated before its
// first eager launch, under the layer's lock; under stream capture it is
// attached as a child node instead.

#include <mutex>
#include <string>
#include <vector>

#include "runtime/driver_api.hpp"
#include "runtime/kernel_args.hpp"
#include "runtime/loaded_kernel.hpp"

namespace moejit::runtime {

struct RoleLaunch {
  std::string role;  // "dispatch", "compute", "finalize"
  const LoadedKernel* kernel = nullptr;
  std::string cubin_key;  // the kernel cache key (a SHA-256 over what built the cubin)
  LaunchDims dims;
  KernelArgs args;
};

// The child-graph key: SHA-256 over each role's argument bytes, cubin key and
// (SMEM, threads, grid) triple, and the edge kind.
std::string role_graph_key(const std::vector<RoleLaunch>& roles, bool programmatic);

// Launches the roles one after another on `stream`, without a graph. With
// `programmatic`, every role after the first carries the programmatic stream
// serialization attribute.
void launch_roles(std::vector<RoleLaunch>& roles, CUstream stream, bool programmatic);

class RoleGraph {
 public:
  RoleGraph(std::vector<RoleLaunch>& roles, CUcontext ctx, bool programmatic);
  ~RoleGraph();
  RoleGraph(const RoleGraph&) = delete;
  RoleGraph& operator=(const RoleGraph&) = delete;

  // Once, before the first launch (the caller holds a RelaxedCaptureScope:
  // another thread may be capturing in global mode). The graph's own mutex
  // serializes instantiate, launch and attach: threads whose forwards have the
  // same arguments share one RoleGraph, and no driver call is safe on one graph
  // object from two threads at once.
  void instantiate();
  bool instantiated() const {
    const std::lock_guard lock(mutex_);
    return exec_ != nullptr;
  }
  // Eager: cuGraphLaunch of the instantiated graph.
  void launch(CUstream stream);
  // `stream` is capturing: adds this graph as a child node after the
  // stream's current capture dependencies, which then become that node.
  void attach(CUstream stream);

 private:
  mutable std::mutex mutex_;
  CUgraph graph_ = nullptr;
  CUgraphExec exec_ = nullptr;
};

// Whether `stream` is capturing; throws if its capture was invalidated.
bool stream_is_capturing(CUstream stream);

// While alive and `active`, this thread may make calls that stream capture
// forbids in global mode (allocation, module loading, synchronization of
// other streams): the first forward of a shape may happen inside a capture.
class RelaxedCaptureScope {
 public:
  explicit RelaxedCaptureScope(bool active);
  ~RelaxedCaptureScope();
  RelaxedCaptureScope(const RelaxedCaptureScope&) = delete;
  RelaxedCaptureScope& operator=(const RelaxedCaptureScope&) = delete;

 private:
  bool active_;
  CUstreamCaptureMode previous_ = CU_STREAM_CAPTURE_MODE_RELAXED;
};

}  // namespace moejit::runtime
