#pragma once
// moejit::runtime::MoeLayer: the fused MoE layer of a decode step on one GPU.
//
//   MoeLayer layer(config, weights, options);  // packs the weights (JIT transform kernel)
//   MoeForwardArgs args{.x_q = xq, .x_scales = xs, .topk_ids = ids, .topk_weights = w, .y = y, .tokens = B};
//   layer.forward(args, stream);
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
#include "codegen/moe_launch_plan.hpp"
#include "runtime/device.hpp"
#include "runtime/loaded_kernel.hpp"
#include "runtime/role_graph.hpp"
#include "runtime/tensor_map.hpp"
#include "runtime/weight_packing.hpp"
#include "templates/moe_contract.cuh"

namespace moejit::runtime {

// Input the layer refuses: names the field, its value and the allowed range.
// (The same type as the planner's: a config field and a forward argument are
// refused alike.)
using InvalidInput = codegen::ConfigError;

struct MoeLayerOptions {
  // What changes the emitted kernels (the compute path, BF16 input, tuning
  // overrides): the plan's inputs, the same as `moejit plan/precompile/inspect`
  // and the bench take.
  codegen::MoeCodegenOptions codegen;
  int device = 0;
  // Validate topk_ids on the host before launch: a device->host copy and a
  // stream sync per forward, and refused while the stream is capturing. Off
  // (the default): an id outside [0, E) still never reads a neighbour; it
  // poisons its token with NaN.
  bool check_routes_on_host = false;
  // Programmatic dependent launch between the roles: the compute role's
  // weight stream starts while the dispatch role (when there is one) runs,
  // and finalize launches as compute drains. Unset: as planned for each B
  // (codegen::MoeLaunchPlan::pdl, `moejit plan` row "PDL between roles").
  std::optional<bool> pdl;
  // Launch each forward as its cached role graph (false: one launch per role).
  bool use_graphs = true;
  // The SMs the persistent roles plan their grids for (0: the device's). A
  // green-context partition's size (runtime/sm_partitions.hpp), for a layer
  // built with that partition's context current and run on its streams.
  int sm_count = 0;
};

// Checkpoint-layout MXFP4 weights in device memory (DESIGN.md "Weights").
// With config.shared_expert every array holds E + 1 experts: the fused shared
// expert, in MXFP4 like the routed ones, is the last (E' = weight_experts()).
struct CheckpointWeightsDevice {
  CUdeviceptr w1 = 0, s1 = 0;  // [E'][2I][H/2], [E'][2I][H/32]
  CUdeviceptr w2 = 0, s2 = 0;  // [E'][H][I/2],  [E'][H][I/32]
  CUdeviceptr b1 = 0, b2 = 0;  // config.biases: BF16 [E'][2I] (W1's row order), [E'][H]; else 0
};

// Weights packed ahead of time (runtime/weight_packing.hpp, `moejit::pack_weights`)
// and already on the device: the layer reads them where they are, copies
// nothing, and the caller keeps them alive while the layer lives.
struct PackedWeightsDevice {
  CUdeviceptr w1 = 0, w2 = 0;  // step blobs, packed_bytes() each
  int top_scale_code = -1;     // PackedWeightsHost::top_scale_code
  std::string atom;            // PackedWeightsHost::atom: the layout they are packed in
  CUdeviceptr b1 = 0, b2 = 0;  // the checkpoint's biases (CheckpointWeightsDevice), with config.biases
  // PackedWeightsHost::subnormal_weight_scales; true (the kernels that are exact for any weights) unless known.
  bool subnormal_weight_scales = true;
};
// Host-packed weights the caller uploaded to w1 and w2: what the packer found in the scales travels with them, so
// the layer plans as one built from the checkpoint (a left-out subnormal_weight_scales plans no token frame).
inline PackedWeightsDevice packed_on_device(const PackedWeightsHost& host, CUdeviceptr w1, CUdeviceptr w2,
                                            CUdeviceptr b1 = 0, CUdeviceptr b2 = 0) {
  return {w1, w2, host.top_scale_code, host.atom, b1, b2, host.subnormal_weight_scales};
}

// Device buffers of one forward. Pre-quantized x: x_q [B][H] E4M3 + x_scales
// UE8M0 bytes [B][H/32] (int32 words [B][H/128] where H is a multiple of 128);
// BF16 x (options.input_bf16): x_bf16 [B][H].
struct MoeForwardArgs {
  CUdeviceptr x_q = 0, x_scales = 0, x_bf16 = 0;
  CUdeviceptr topk_ids = 0;      // int32 [B][k]
  CUdeviceptr topk_weights = 0;  // fp32 [B][k]
  CUdeviceptr y = 0;             // bf16 [B][H]
  int tokens = 0;
  // The caller's workspace (0: the layer's own, one per stream). At least
  // workspace_bytes(), 256-byte aligned, zeroed once before its first
  // forward; every forward leaves it ready for the next. Layers with the same
  // workspace layout (the same config, options and device) that run one
  // after another on one stream may share one; layers with other layouts,
  // or forwards that may overlap (other streams), need their own.
  CUdeviceptr workspace = 0;
  // A profiler's buffer (0: none): the compute role's CTAs record their
  // milestones into it, contract::kTraceSlots u64 per CTA of the plan's
  // compute grid (contract::TraceSlot; `moejit_bench_moe --trace` reads it),
  // zeroed before the forward (the split-K wait slot is added to).
  CUdeviceptr trace = 0;
};

// Optional events recorded between the roles (for the benchmark's per-role
// split). A forward given events launches its roles directly, without PDL.
struct RoleEvents {
  CUevent start = nullptr, dispatched = nullptr, computed = nullptr, finalized = nullptr;
};

// The checks the layer makes before any launch. Throw InvalidInput naming the field.
// validate_layer_config: every Table 10 range, and what this version supports (E <= 2048; no fused shared expert
// with R > 1).
void validate_layer_config(const codegen::MoeConfig& config);
void validate_forward_args(const codegen::MoeConfig& config, const MoeLayerOptions& options,
                           const MoeForwardArgs& args);
void validate_route_ids(const codegen::MoeConfig& config, const std::vector<std::int32_t>& ids);
void validate_layer_options(const MoeLayerOptions& options);

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
  // From packed weights: no transform, no second copy on the device.
  MoeLayer(const codegen::MoeConfig& config, const PackedWeightsDevice& packed, const MoeLayerOptions& options = {});
  ~MoeLayer();
  MoeLayer(const MoeLayer&) = delete;
  MoeLayer& operator=(const MoeLayer&) = delete;

  void forward(const MoeForwardArgs& args, CUstream stream, const RoleEvents* events = nullptr);

  const codegen::MoeConfig& config() const { return config_; }
  const MoeLayerOptions& options() const { return options_; }
  const codegen::AtomTraits& atom() const { return *atom_; }
  // The workspace regions (templates/moe_contract.cuh) and one stream's bytes.
  contract::WorkspaceLayout workspace_layout() const;
  std::int64_t workspace_bytes() const { return workspace_bytes_; }
  // The layer's own workspace for `stream` (0 before its first forward
  // without a caller's workspace).
  CUdeviceptr workspace(CUstream stream) const;
  // Waits for `stream`, then frees its workspace and graphs (call it before
  // destroying a stream the layer has seen; a later forward starts afresh). A
  // stream that captured a forward keeps its workspace until the layer is
  // destroyed: the caller's captured graphs still write it.
  void release_stream(CUstream stream);
  // The launch plan a forward of `tokens` runs (pure: no kernel is built).
  codegen::MoeLaunchPlan plan(int tokens) const;
  // What a forward with these arguments launches on `stream`, in order: each
  // role's kernel, grid, block, SMEM and bound arguments (builds the kernels
  // and the stream's workspace as a first forward would, launches nothing).
  std::vector<RoleLaunch> launches(const MoeForwardArgs& args, CUstream stream);
  int kernels_built() const;
  struct GraphCounters {
    std::uint64_t built = 0;      // role graphs created (a miss of the child-graph cache)
    std::uint64_t reused = 0;     // new argument sets whose digest matched an existing graph
    std::uint64_t warm_hits = 0;  // forwards that found their graph by argument lookup
  };
  GraphCounters graph_counters() const;
  // The packed step blobs of W1 and W2 (contract::weight_step_offset), for tests.
  struct PackedDevice {
    CUdeviceptr w1, w2;
  };
  PackedDevice packed_weights() const { return {w1_ptr_, w2_ptr_}; }

 private:
  struct Setup {};
  // What both public constructors do first: validate, find the device, atom and context.
  MoeLayer(const codegen::MoeConfig& config, const MoeLayerOptions& options, Setup);
  struct RoleKernels;
  struct StreamState;
  struct LaunchKey {
    int tokens;
    CUdeviceptr x_q, x_scales, x_bf16, topk_ids, topk_weights, y, workspace, trace;
    friend bool operator==(const LaunchKey&, const LaunchKey&) = default;
  };
  struct LaunchKeyHash {
    std::size_t operator()(const LaunchKey& k) const noexcept;
  };

  // The kernels a forward of `tokens` runs and that forward's own plan: one
  // kernel set serves every B with the same compute kernel, but the grids of
  // the streaming roles grow with B, so launch dimensions come from B's plan.
  struct TokenLaunch {
    const RoleKernels* kernels = nullptr;
    codegen::MoeLaunchPlan plan;
  };
  const TokenLaunch& kernels_for_locked(int tokens);
  // A batch size's role kernels compiled (or found) in the kernel cache without the layer's lock, before the
  // first forward of that size takes it: an NVRTC build takes seconds, and other threads' forwards of the sizes
  // already built must not wait for it. The cache builds each kernel once however many threads ask; loading it
  // into the context (kernels_for_locked) stays under the lock.
  void build_kernels_unlocked(int tokens);
  static bool pdl_for(const TokenLaunch& t) { return t.plan.pdl; }  // plan() applied MoeLayerOptions::pdl
  StreamState& stream_state_locked(CUstream stream, bool capturing);
  static LaunchKey launch_key(const MoeForwardArgs& a);
  // The caller's workspace, checked, or the stream's own (allocated and zeroed on first use).
  CUdeviceptr workspace_for_locked(const MoeForwardArgs& a, StreamState& st);
  void check_caller_workspace(CUdeviceptr ws) const;
  // Each input and output holds its B rows and lives on this layer's GPU (on a graph's first build, and on an
  // eager forward whose arguments the stream's last did not have: a short y was written past its end).
  void check_forward_buffers(const MoeForwardArgs& a) const;
  std::vector<RoleLaunch> role_launches(const TokenLaunch& t, const MoeForwardArgs& a, CUdeviceptr ws) const;
  void pack_weights(const CheckpointWeightsDevice& weights);
  void adopt_packed(const PackedWeightsDevice& packed);
  void adopt_biases(CUdeviceptr b1, CUdeviceptr b2, const char* owner);  // owner: "weights" or "packed"
  void map_weights();
  std::shared_ptr<RoleGraph> graph_for(const MoeForwardArgs& a, CUstream stream, bool capturing);
  void check_routes(const MoeForwardArgs& a, CUstream stream, bool capturing) const;

  codegen::MoeConfig config_;
  MoeLayerOptions options_;
  DeviceInfo device_;
  codegen::DeviceProfile profile_;
  codegen::Target target_;
  const codegen::AtomTraits* atom_ = nullptr;
  CUcontext context_ = nullptr;  // the graph nodes' explicit context
  CUdevice cu_device_ = 0;       // options.device's handle: a call from another GPU's thread switches to context_
  std::int64_t workspace_bytes_ = 0;
  int workspace_ep_ = 0;                 // the EpMode bits that shape the workspace (contract::kEpLayoutModes)
  DeviceBuffer w1_, w2_;                 // packed step blobs, when the layer packed them
  CUdeviceptr w1_ptr_ = 0, w2_ptr_ = 0;  // the step blobs it reads (its own, or the caller's)
  TensorMapBlob w1_map_, w2_map_;        // their TMA maps, passed by value to the compute role
  DeviceBuffer b1_, b2_;                 // config.biases: FP32 (gate, up) pairs [E][I'], rows [E][H'] (padded)
  CUstream setup_stream_ =
      nullptr;  // blocking (see the constructor): the setup's copies and transforms, new workspaces' clears
  mutable std::mutex mutex_;
  std::map<std::string, std::unique_ptr<RoleKernels>> kernels_;  // by codegen::role_kernels_key
  std::vector<std::unique_ptr<TokenLaunch>> by_tokens_;          // [B] -> kernels and plan, filled on first use
  std::unordered_map<CUstream, std::unique_ptr<StreamState>> streams_;
  std::unordered_map<std::string, std::shared_ptr<RoleGraph>> graphs_;  // the child-graph cache, by digest
  std::vector<DeviceBuffer> retired_workspaces_;                        // of released streams that captured forwards
  GraphCounters graph_counters_;
};

}  // namespace moejit::runtime
