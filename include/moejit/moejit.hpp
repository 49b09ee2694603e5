#pragma once
// moejit's public C++ API: the fused MoE layer of a decode step on one GPU,
// the plan of each launch shape, and offline precompilation.
//
//   #include <moejit/moejit.hpp>
//   moejit::Config config = moejit::builtin_config("glm5.2");
//   moejit::Layer layer(config, {w1, s1, w2, s2});         // packs the weights
//   layer.forward({.x_q = xq, .x_scales = xs, .topk_ids = ids, .topk_weights = tw, .y = y, .tokens = B}, stream);
//
// This is the only header `cmake --install` ships, and libmoejit.so exports
// only what it declares: it names no CUDA, LLVM, fmt or JSON type, so an
// engine links it beside its own copies of those. Device buffers and streams
// cross as integers and `void*` (a CUdeviceptr and a CUstream).
//
// Every refusal throws moejit::Error before anything launches; field() names
// the input ("hidden", "batch", "topk_ids", "path", ...) and what() its value
// and the allowed range.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#define MOEJIT_API __attribute__((visibility("default")))

namespace moejit {

// "0.1.0": the library's version (the CMake package's).
MOEJIT_API const char* version();

class MOEJIT_API Error : public std::runtime_error {
 public:
  Error(std::string field, const std::string& message);
  ~Error() override;  // out of line: the library holds Error's vtable and typeinfo, once
  // The refused input's field, or "" for an error that is not bad input
  // (a kernel that fails to build, the CUDA driver, a full disk).
  const std::string& field() const noexcept { return field_; }

 private:
  std::string field_;
};

// The model half of a launch shape. The defaults are the library's; a JSON
// config holds the same keys (to_json writes one; `moejit plan --help` shows them).
struct Config {
  std::string name = "custom";
  int ranks = 1;         // R: expert-parallel ranks
  int experts = 0;       // E: routed experts over all ranks
  int top_k = 0;         // k
  int hidden = 0;        // H (any multiple of 32: the kernels zero-pad it, to 128 or 256, inside)
  int intermediate = 0;  // I
  std::string recipe = "w4a8-mx";
  std::optional<float> swiglu_clamp = 10.0f;  // c (gpt-oss: its limit, 7); nullopt: no clamp
  std::string activation = "swiglu";          // or "gpt-oss": g' sigmoid(alpha g') (u' + 1)
  float alpha = 1.702f;                       // gpt-oss's sigmoid slope
  std::string gate_up = "halves";             // W1's gate/up rows: "halves" or "interleaved" (gpt-oss)
  bool biases = false;                        // per-expert BF16 biases b1, b2 (gpt-oss; CheckpointWeights)
  // A fused shared expert (every token, weight 1; its weights are expert E of
  // CheckpointWeights, in MXFP4), or none. The value is the K-group (32 or 128)
  // of the seed's FP8 shared weights, which `moejit plan`'s Table 2 model uses.
  std::optional<int> shared_expert_k_group;
  int dispatch_sms = 6;
  int token_capacity = 256;  // the most tokens per forward (per rank)
  bool batched_routes = true;
};

MOEJIT_API std::vector<std::string> builtin_models();  // "glm5.2", "dsv4.1-flash", "gpt-oss-120b", "gpt-oss-20b"
MOEJIT_API Config builtin_config(std::string_view model);
MOEJIT_API Config config_from_json(std::string_view json);
MOEJIT_API Config config_from_file(const std::string& path);
MOEJIT_API std::string to_json(const Config& config);
// Every range the layer checks (also done by plan(), precompile() and Layer).
MOEJIT_API void validate(const Config& config);

// What changes the emitted kernels, and how the layer launches them.
struct LayerOptions {
  std::string path;         // "" (the target's default), "exact" or "fast" (docs/numerics.md)
  bool input_bf16 = false;  // x arrives as BF16 [B][H] and the dispatch role quantizes it
  int tile_n = 0;           // tuning overrides, 0: as planned
  int stages = 0;
  int ctas_per_sm = 0;
  // The compute role's schedule: "" as planned, "stream", "units" (small B, the fast path on one GPU) or "items"
  // (small B, sm_90a's exact path on one GPU) (`moejit plan` row "schedule").
  std::string schedule;
  // Expert parallelism (ranks > 1): "" as planned, or "none" or a +-joined list of mirror, pull, staged-returns,
  // direct-scan (docs/expert-parallelism.md); dispatch_sms: -1 as planned (or MOEJIT_DISPATCH_SMS), else the SMs
  // kept out of the compute grid for the dispatch role.
  std::string ep_mode;
  int dispatch_sms = -1;
  int device = 0;                     // the CUDA device ordinal
  bool check_routes_on_host = false;  // validate topk_ids on the host (a copy and a sync per forward)
  // Programmatic dependent launch between the roles: unset as planned for each B (Plan::pdl).
  std::optional<bool> pdl;
  bool use_graphs = true;  // launch each forward as its cached role graph
};

// One role kernel's launch.
struct RolePlan {
  bool launched = false;
  int grid = 0;
  int threads = 0;
  int smem_bytes = 0;  // dynamic shared memory
  int blocks_per_sm = 0;
  int register_cap = 0;  // .maxnreg, 0: none
};

// What a forward of `batch` tokens launches: the same numbers `moejit plan` prints.
struct Plan {
  std::string model, device, target, atom, path;
  int batch = 0;
  int tile_n = 0;
  int stages = 0;
  std::string schedule = "stream";  // "stream", "units" or "items" (LayerOptions::schedule)
  bool pdl = false;                 // programmatic dependent launch between the roles (LayerOptions::pdl applied)
  std::string ep_mode = "none";     // expert parallelism's modes (LayerOptions::ep_mode), "none" with one rank
  int dispatch_sms = 0;             // SMs kept out of the compute grid for the dispatch role
  RolePlan dispatch, compute, finalize;
  std::int64_t workspace_bytes = 0;  // per stream
  std::vector<std::string> notes;    // each decision with its reason
  std::string json;                  // all of it, as `moejit plan --json`
};

MOEJIT_API std::vector<std::string> builtin_devices();  // "h200", "h100", "rtx-pro-5000"
// The plan on a built-in device profile; needs no GPU.
MOEJIT_API Plan plan(const Config& config, int batch, std::string_view device = "h200",
                     const LayerOptions& options = {});

// Precompile: build every kernel a layer with `options` can need for these
// batch sizes on these targets ("sm_90a", "sm_120a") into the kernel cache,
// so that later processes (e.g. with MOEJIT_NO_JIT=1) never compile. Needs no GPU.
struct PrecompileReport {
  int kernels = 0;                  // distinct kernels the shapes need
  int compiled = 0;                 // built now
  int cached = 0;                   // already in the cache
  std::vector<std::string> errors;  // one per kernel that failed to build
  bool ok() const { return errors.empty() && compiled + cached == kernels; }
};
// progress(done, total, kernel) after each kernel; called from worker threads, one at a time.
using PrecompileProgress = std::function<void(int done, int total, std::string_view kernel)>;
MOEJIT_API PrecompileReport precompile(const Config& config, const std::vector<int>& batches,
                                       const std::vector<std::string>& targets = {"sm_90a"},
                                       const LayerOptions& options = {}, int jobs = 0,
                                       const PrecompileProgress& progress = {});

// Process-wide settings, by struct instead of the environment. Call before the
// first layer, plan build or precompile; unset fields keep the environment's
// (MOEJIT_CACHE_DIR, MOEJIT_CACHE_MAX_BYTES, MOEJIT_NO_JIT).
enum class LogLevel { info, warning, error };
using LogCallback = std::function<void(LogLevel level, std::string_view message)>;
struct Settings {
  std::optional<std::string> cache_dir;  // "" keeps kernels in memory only
  std::optional<std::uint64_t> cache_max_bytes;
  std::optional<bool> no_jit;  // a kernel missing from the cache is an error
  LogCallback log;             // warnings and each kernel compile (info); empty: warnings on stderr
};
// Throws Error("settings") once the kernel cache is in use.
MOEJIT_API void configure(const Settings& settings);

// Checkpoint-layout MXFP4 expert weights in device memory (README, "Weights"):
// w1 [E][2I][H/2] with s1 [E][2I][H/32], w2 [E][H][I/2] with s2 [E][H][I/32].
// With Config::biases: b1 BF16 [E][2I] (one per W1 row, in the checkpoint's
// row order) and b2 BF16 [E][H]; else both 0. With a fused shared expert
// (Config::shared_expert_k_group) every array holds E + 1 experts: the shared
// expert, quantized to MXFP4 like the routed ones, is the last.
struct CheckpointWeights {
  std::uint64_t w1 = 0, s1 = 0, w2 = 0, s2 = 0;
  std::uint64_t b1 = 0, b2 = 0;
};

// Offline packing: the layer's own weight layout, made on the host, so that a
// layer built from it (Layer(config, PackedWeightsDevice)) never holds the
// checkpoint and the packed copy on the GPU together. The checkpoint arrays
// are host bytes in the layout above, with their sizes.
struct CheckpointWeightsHost {
  const std::uint8_t *w1 = nullptr, *s1 = nullptr, *w2 = nullptr, *s2 = nullptr;
  std::size_t w1_bytes = 0, s1_bytes = 0, w2_bytes = 0, s2_bytes = 0;
};
struct PackedWeights {
  std::vector<std::uint8_t> w1, w2;  // step blobs, as many bytes as the checkpoint's payload + scales
  int top_scale_code = 0;            // the largest UE8M0 code in s1 and s2
  std::string atom;                  // the MMA atom whose layout they are in
  // Some K32 block of scale code 0 (2^-127) holds a nonzero value: the layer then runs the kernels that decode
  // that code exactly instead of as 0.0 (one integer operation a scale more).
  bool subnormal_weight_scales = false;
};
// For a layer with `options` on `target` ("sm_90a"). Needs no GPU. Throws
// Error naming the array whose size is wrong, or a scale code the path refuses.
MOEJIT_API PackedWeights pack_weights(const Config& config, const CheckpointWeightsHost& weights,
                                      const LayerOptions& options = {}, std::string_view target = "sm_90a");
// Packed weights on the device; the layer reads them in place (keep them alive).
struct PackedWeightsDevice {
  std::uint64_t w1 = 0, w2 = 0;
  int top_scale_code = -1;
  std::string atom;
  std::uint64_t b1 = 0, b2 = 0;         // the checkpoint's biases (CheckpointWeights), with Config::biases
  bool subnormal_weight_scales = true;  // PackedWeights::subnormal_weight_scales (true: correct for any weights)
};
// `packed` uploaded to w1 and w2 (and the biases): what pack_weights found travels with them, so the layer plans
// as one built from the checkpoint. (A subnormal_weight_scales left at true also plans no token frame.)
inline PackedWeightsDevice packed_on_device(const PackedWeights& packed, std::uint64_t w1, std::uint64_t w2,
                                            std::uint64_t b1 = 0, std::uint64_t b2 = 0) {
  return {w1, w2, packed.top_scale_code, packed.atom, b1, b2, packed.subnormal_weight_scales};
}

// One forward's device buffers: x_q E4M3 [B][H] + x_scales UE8M0 bytes
// [B][H/32] (int32 [B][H/128] where H is a multiple of 128; or x_bf16 [B][H]
// with input_bf16), topk_ids int32 [B][k], topk_weights
// fp32 [B][k], y bf16 [B][H].
struct ForwardArgs {
  std::uint64_t x_q = 0, x_scales = 0, x_bf16 = 0;
  std::uint64_t topk_ids = 0, topk_weights = 0;
  std::uint64_t y = 0;
  int tokens = 0;
  // The caller's workspace, 0: the layer's own (one per stream). At least
  // workspace_bytes(), 256-byte aligned, zeroed once before its first
  // forward; every forward leaves it ready for the next. Layers with the same
  // config, options and device that run one after another on one stream may
  // share one; other layers, or forwards that may overlap, need their own.
  std::uint64_t workspace = 0;
};

// The bytes of one workspace of a layer with `config` and `options` on a
// device like `device` (a built-in profile); a pure function, no GPU needed.
MOEJIT_API std::int64_t workspace_bytes(const Config& config, const LayerOptions& options = {},
                                        std::string_view device = "h200");

// The layer on the device of options.device, whose CUDA context must be
// current (as it is under torch) when the layer is built: under another GPU's
// context it is refused (field "device"). The weights must be complete then
// (their uploads finished: it reads them without waiting for any of the
// caller's streams). forward() may be called from several threads with
// different streams, also from a thread on another GPU or none: it makes the
// layer's context current for the call.
class MOEJIT_API Layer {
 public:
  Layer(const Config& config, const CheckpointWeights& weights, const LayerOptions& options = {});
  // From packed weights (pack_weights, uploaded): no transform, no second copy.
  Layer(const Config& config, const PackedWeightsDevice& packed, const LayerOptions& options = {});
  ~Layer();
  Layer(Layer&&) noexcept;
  Layer& operator=(Layer&&) noexcept;

  // stream: a CUstream (nullptr: the legacy default stream); may be capturing.
  void forward(const ForwardArgs& args, void* stream);
  Plan plan(int tokens) const;
  std::int64_t workspace_bytes() const;  // per stream
  // Waits for `stream`, then frees its workspace and graphs. A stream that captured a forward keeps its
  // workspace until the layer is destroyed (a captured graph writes it wherever it replays); destroy such
  // graphs before the layer.
  void release_stream(void* stream);

 private:
  struct Impl;
  Impl& live() const;  // throws Error("layer") on a moved-from Layer
  std::unique_ptr<Impl> impl_;
};

}  // namespace moejit
