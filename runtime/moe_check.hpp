#pragma once
// Correctness harness for the MoE layer, shared by the GPU tests, the
// benchmark and `moejit run`: random checkpoint weights, routings of several
// shapes, poisoned outputs, and the comparison against the CPU references.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/device.hpp"
#include "runtime/moe_layer.hpp"
#include "runtime/moe_reference.hpp"
#include "runtime/mx_format.hpp"

namespace moejit::runtime {

enum class RoutingKind {
  uniform,     // k distinct experts per token, uniformly
  one_expert,  // every token on the same k experts (maximal skew: B rows each)
  zipf,        // expert popularity ~ 1/rank^1.2
  sparse,      // all routes among 2k experts: most experts empty
};
std::string_view routing_name(RoutingKind kind);
inline constexpr RoutingKind k_all_routings[] = {RoutingKind::uniform, RoutingKind::one_expert, RoutingKind::zipf,
                                                 RoutingKind::sparse};

reference::Routing random_routing(const reference::MoeProblem& p, int tokens, RoutingKind kind, std::uint64_t seed);

// One forward's random inputs on the host: x ~ N(0, 1) on the BF16 grid, its
// MXFP8 quantization (elements, per-32 scales, and the kernels' packed scale
// words), and a routing of `kind`. Drawn from `seed`: x first, then the routing.
struct RandomInputs {
  std::vector<float> x;  // the BF16 values, as floats
  std::vector<std::uint16_t> x_bf16;
  mx::MxMatrix xq;
  std::vector<std::uint32_t> xs_words;
  reference::Routing routing;
};
RandomInputs random_inputs(const reference::MoeProblem& p, int tokens, RoutingKind kind, std::uint64_t seed);

// Random MXFP4 checkpoint weights on the host and the device. Scale codes are
// drawn from [118, 122] so activations stay in the clamp's working range.
struct RandomWeights {
  reference::CheckpointWeights host;
  DeviceBuffer w1, s1, w2, s2;
  CheckpointWeightsDevice device() const { return {w1.ptr(), s1.ptr(), w2.ptr(), s2.ptr()}; }
};
RandomWeights random_weights(const reference::MoeProblem& p, std::uint64_t seed);

struct MoeCheckResult {
  int tokens = 0;
  RoutingKind routing = RoutingKind::uniform;
  reference::Agreement quantized;      // all tokens, against the quantized reference
  reference::Agreement dense;          // up to 16 tokens, against the unquantized reference
  std::size_t unwritten = 0;           // outputs still holding the poison pattern
  bool rerun_identical = false;        // a second forward produced the same bits
  bool x_quantization_matches = true;  // BF16 input: the kernel's MXFP8 equals the CPU twin's
  int epoch = 0;                       // the workspace header's epoch after the two forwards (must be 2)
  double gpu_ms = 0;
  double wall_seconds = 0;  // the whole check, CPU references included
  bool passed() const;
  std::string summary() const;
};

// Runs one forward of `layer` on fresh random inputs (x, routing, route weights
// drawn from `seed`) and checks it.
MoeCheckResult check_forward(MoeLayer& layer, const RandomWeights& weights, int tokens, RoutingKind routing,
                             std::uint64_t seed);

}  // namespace moejit::runtime
