#pragma once
// moejit::MoeLayer: the fused MoE layer of a decode step on one GPU.
//
//   MoeLayer layer(config, weights, options);   // packs the weights (JIT transform kernel)
//   layer.forward(x, topk_ids, topk_weights, y, B, stream);
//
// The first forward for a batch size plans its geometry, builds (or fetches)
// the role kernels and launches; later ones only launch. Bad input is
// refused before any launch with the field, its value and the allowed range.

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "codegen/device_profile.hpp"
#include "codegen/moe_config.hpp"
#include "codegen/moe_kernels.hpp"
#include "runtime/device.hpp"
#include "runtime/loaded_kernel.hpp"
#include "runtime/moe_reference.hpp"
#include "runtime/moe_workspace.hpp"
#include "runtime/role_graph.hpp"
#include "runtime/tensor_map.hpp"

namespace moejit::runtime {

// Input the layer refuses: names the field, its value and the allowed range.
// (The same type as the planner's: a config field and a forward argument are
// refused alike.)
using InvalidInput = codegen::ConfigError;

struct MoeLayerOptions {
  bool input_bf16 = false;  // x arrives as BF16 and is quantized by the dispatch role
  int device = 0;
  // Validate topk_ids on the host before launch: a device->host copy and a
  // stream sync per forward, and refused while the stream is capturing. Off
  // (the default): an id outside [0, E) still never reads a neighbour; it
  // poisons its token with NaN.
  bool check_routes_on_host = false;
  // Programmatic dependent launch between the roles: compute starts (barrier
  // setup, descriptor prefetch) while dispatch runs, finalize is launched as
  // compute drains. Off by default: on the H200 it measured within noise
  // (+-3%) at B <= 64 and 0.6-2.7% slower at B = 256
  // (bench/results/2026-11-30-h200-runtime.md).
  bool pdl = false;
  // Launch each forward as its cached role graph (false: three launches).
  bool use_graphs = true;
  // Tuning overrides of the planned geometry (0: as planned; ctas_per_sm
  // chooses the depth that lets that many compute CTAs share an SM;
  // compute_grid replaces the persistent grid and must still be resident).
  int tile_n = 0;
  int stages = 0;
  int ctas_per_sm = 0;
  int compute_grid = 0;
};

// Checkpoint-layout MXFP4 weights in device memory (DESIGN.md "Weights").
struct CheckpointWeightsDevice {
  CUdeviceptr w1 = 0, s1 = 0;  // [E][2I][H/2], [E][2I][H/32]
  CUdeviceptr w2 = 0, s2 = 0;  // [E][H][I/2],  [E][H][I/32]
};

// Device buffers of one forward. Pre-quantized x: x_q [B][H] E4M3 + x_scales
// [B][H/128] int32; BF16 x (options.input_bf16): x_bf16 [B][H].
struct MoeForwardArgs {
  CUdeviceptr x_q = 0, x_scales = 0, x_bf16 = 0;
  CUdeviceptr topk_ids = 0;      // int32 [B][k]
  CUdeviceptr topk_weights = 0;  // fp32 [B][k]
  CUdeviceptr y = 0;             // bf16 [B][H]
  int tokens = 0;
};

// Optional events recorded between the roles (for the benchmark's per-role
// split). A forward given events launches its roles directly, without PDL.
struct RoleEvents {
  CUevent start = nullptr, dispatched = nullptr, computed = nullptr, finalized = nullptr;
};

// The operator a config describes, as the CPU references take it.
reference::MoeProblem problem_of(const codegen::MoeConfig& config);

// The checks the layer makes before any launch. Throw InvalidInput naming the field.
// validate_layer_config: every Table 10 range, and what this version supports (R = 1, E <= 2048).
void validate_layer_config(const codegen::MoeConfig& config);
void validate_forward_args(const codegen::MoeConfig& config, const MoeLayerOptions& options,
                           const MoeForwardArgs& args);
void validate_route_ids(const codegen::MoeConfig& config, const std::vector<std::int32_t>& ids);
void validate_layer_options(const MoeLayerOptions& options);

// The planner's geometry for `tokens` on `profile`, as the kernel shape of the
// role kernels (pure: the no-GPU paths use it too).
codegen::MoeKernelShape plan_kernel_shape(const codegen::MoeConfig& config, const MoeLayerOptions& options, int tokens,
                                          const codegen::DeviceProfile& profile);
// Every kernel a forward of `tokens` needs on the profile's target: the three
// roles and the two weight transforms.
std::vector<codegen::KernelSpec> moe_kernel_specs(const codegen::MoeConfig& config, const MoeLayerOptions& options,
                                                  int tokens, const codegen::DeviceProfile& profile);
// The profile of a live device.
codegen::DeviceProfile device_profile(const DeviceInfo& device);

// Thread safety: forward() may be called from several threads at once. Each
// stream gets its own workspace (allocated on its first forward), so
// concurrent forwards must use different streams; each kernel is compiled once.
//
// Graphs: a forward is the layer's role graph for its arguments (child-graph
// cache, keyed by SHA-256 of the roles' argument bytes, cubins and launch
// triples). On a capturing stream it is attached as a child node; otherwise
// it is instantiated once and launched. A warm forward (arguments seen before
// on that stream) is a hash-map lookup and cuGraphLaunch: no allocation, no
// hashing of buffers, no file I/O.
class MoeLayer {
 public:
  MoeLayer(const codegen::MoeConfig& config, const CheckpointWeightsDevice& weights,
           const MoeLayerOptions& options = {});
  ~MoeLayer();
  MoeLayer(const MoeLayer&) = delete;
  MoeLayer& operator=(const MoeLayer&) = delete;

  void forward(const MoeForwardArgs& args, CUstream stream, const RoleEvents* events = nullptr);

  const codegen::MoeConfig& config() const { return config_; }
  const reference::MoeProblem& problem() const { return problem_; }
  const MoeLayerOptions& options() const { return options_; }
  const MoeWorkspaceLayout& workspace_layout() const { return layout_; }
  // The workspace forwards on `stream` use (0 before its first forward).
  CUdeviceptr workspace(CUstream stream) const;
  // Waits for `stream`, then frees its workspace and graphs (call it before
  // destroying a stream the layer has seen; a later forward starts afresh).
  void release_stream(CUstream stream);
  // The kernel shape the layer uses for `tokens` (plans it if needed).
  codegen::MoeKernelShape kernel_shape(int tokens) const;
  int kernels_built() const;
  struct GraphCounters {
    std::uint64_t built = 0;      // role graphs created (a miss of the child-graph cache)
    std::uint64_t reused = 0;     // new argument sets whose digest matched an existing graph
    std::uint64_t warm_hits = 0;  // forwards that found their graph by argument lookup
  };
  GraphCounters graph_counters() const;
  // The packed weights (payload, scales) of W1 and W2, for tests.
  struct PackedDevice {
    CUdeviceptr w1, s1, w2, s2;
  };
  PackedDevice packed_weights() const { return {w1_.ptr(), s1_.ptr(), w2_.ptr(), s2_.ptr()}; }

 private:
  struct RoleKernels;
  struct StreamState;
  struct LaunchKey {
    int tokens;
    CUdeviceptr x_q, x_scales, x_bf16, topk_ids, topk_weights, y;
    friend bool operator==(const LaunchKey&, const LaunchKey&) = default;
  };
  struct LaunchKeyHash {
    std::size_t operator()(const LaunchKey& k) const noexcept;
  };

  const RoleKernels& kernels_for_locked(int tokens);
  StreamState& stream_state_locked(CUstream stream);
  std::vector<RoleLaunch> role_launches(const RoleKernels& k, const MoeForwardArgs& a, const StreamState& st) const;
  std::shared_ptr<RoleGraph> graph_for(const MoeForwardArgs& a, CUstream stream, bool capturing);
  void check_routes(const MoeForwardArgs& a, bool capturing) const;

  codegen::MoeConfig config_;
  reference::MoeProblem problem_;
  MoeLayerOptions options_;
  DeviceInfo device_;
  codegen::DeviceProfile profile_;
  codegen::Target target_;
  CUcontext context_ = nullptr;  // the graph nodes' explicit context
  MoeWorkspaceLayout layout_;
  DeviceBuffer w1_, s1_, w2_, s2_;   // packed
  TensorMapBlob w1_map_, w2_map_;    // passed by value to the compute role
  CUstream setup_stream_ = nullptr;  // non-blocking: clears new workspaces, also during a capture
  mutable std::mutex mutex_;
  std::map<std::string, std::unique_ptr<RoleKernels>> kernels_;  // by compute spec summary
  std::vector<const RoleKernels*> by_tokens_;                    // [B] -> kernels, filled on first use
  std::unordered_map<CUstream, std::unique_ptr<StreamState>> streams_;
  std::unordered_map<std::string, std::shared_ptr<RoleGraph>> graphs_;  // the child-graph cache, by digest
  GraphCounters graph_counters_;
};

}  // namespace moejit::runtime
