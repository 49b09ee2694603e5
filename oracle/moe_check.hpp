#pragma once
// Correctness harness for the MoE layer, shared by the GPU tests, the
// benchmark and `moejit run`: random checkpoint weights, routings of several
// shapes, poisoned outputs, and the comparison against the CPU references.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "oracle/moe_problem.hpp"
#include "oracle/moe_reference.hpp"
#include "oracle/mx_format.hpp"
#include "runtime/device.hpp"
#include "runtime/moe_layer.hpp"

namespace moejit::oracle {

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

// How x is drawn. normal: N(0, 1). wide: each element N(0, 1) * 2^-u with u
// uniform in [0, 24], so most blocks hold E4M3 subnormals after quantization.
// block_shift (one exponent per K32 block of H, optional): x's block kb is
// multiplied by 2^block_shift[kb] (to balance weight scale codes far from 127).
struct XStyle {
  bool wide = false;
  std::vector<int> block_shift;
  // >= 0: every token's first block is zeros with this scale code (a caller's pre-quantized x that is not
  // MX-normalized: the token frame must not take it as the row's largest scale). MXFP8 x only.
  int zero_block_code = -1;
};

// One forward's random inputs on the host: x on the BF16 grid, its MXFP8
// quantization (elements, and per-32 scales: the layer's x_scales bytes
// [B][H/32]), and a routing of `kind`. Drawn from `seed`: x first, then the routing.
struct RandomInputs {
  std::vector<float> x;  // the BF16 values, as floats
  std::vector<std::uint16_t> x_bf16;
  mx::MxMatrix xq;
  reference::Routing routing;
};
RandomInputs random_inputs(const reference::MoeProblem& p, int tokens, RoutingKind kind, std::uint64_t seed,
                           const XStyle& style = {});

// The UE8M0 codes of random weights. Default: every block's code from
// [118, 122], so activations stay in the clamp's working range. w1_block_code
// (one code per K32 block of H, optional): W1's block kb gets that code in every
// expert and row (pair it with XStyle::block_shift so the products stay finite);
// W2's codes are drawn from [w2_lo, w2_hi].
struct WeightScales {
  std::vector<int> w1_block_code;
  int w2_lo = 118, w2_hi = 122;
};

// Random MXFP4 checkpoint weights on the host and the device.
struct RandomWeights {
  reference::CheckpointWeights host;
  runtime::DeviceBuffer w1, s1, w2, s2, b1, b2;
  runtime::CheckpointWeightsDevice device() const {
    return {w1.ptr(), s1.ptr(), w2.ptr(), s2.ptr(), b1.ptr(), b2.ptr()};
  }
};
// With `biases`, b1 and b2 are BF16 in +-[2^-8, 1] with random signs (never zero).
RandomWeights random_weights(const reference::MoeProblem& p, std::uint64_t seed, const WeightScales& scales = {},
                             bool biases = false);

// Two BF16 outputs compared (reference::compare of their values): nan_or_inf counts `got`'s NaN, Inf and
// 0xFFFF poison.
reference::Agreement compare_bf16(const std::vector<std::uint16_t>& got, const std::vector<std::uint16_t>& want);

struct MoeCheckResult {
  int tokens = 0;
  RoutingKind routing = RoutingKind::uniform;
  std::string path;                // the layer's compute path
  reference::Agreement quantized;  // all tokens, against the quantized reference
  reference::Agreement dense;      // up to 16 tokens, against the unquantized reference
  // Handoff flips (moe_reference.hpp) flagged, and taken to match the kernel: resolved only where the plain
  // reference leaves quantized.cosine under cosine_bar (flips_found -1: not needed), which then holds the resolved one.
  // MOEJIT_RESOLVE_FLIPS=1 resolves every case.
  int flips_found = -1, flips_taken = 0;
  double plain_cosine = 0;       // against the plain reference, where resolved
  std::size_t unwritten = 0;     // outputs still holding the poison pattern
  bool rerun_identical = false;  // a second forward produced the same bits
  bool x_quantization_matches =
      true;                     // the kernel's MXFP8 (BF16 input) and split rows (fast path) equal the CPU twin's
  int epoch = 0;                // the workspace header's epoch after the two forwards (must be 2)
  double cosine_bar = 0.99999;  // quantized-reference cosine every path must reach (docs/numerics.md)
  double dense_bar = 0.97;      // unquantized-reference cosine (the quantization itself stands between)
  double gpu_ms = 0;
  double wall_seconds = 0;  // the whole check, CPU references included
  bool passed() const;
  std::string summary() const;
};

// Runs one forward of each layer (layers of one config, e.g. both compute
// paths) on the same fresh random inputs (x, routing, route weights drawn from
// `seed`) and checks each against the CPU references, computed once.
std::vector<MoeCheckResult> check_forward(const std::vector<runtime::MoeLayer*>& layers, const RandomWeights& weights,
                                          int tokens, RoutingKind routing, std::uint64_t seed,
                                          const XStyle& style = {});
inline MoeCheckResult check_forward(runtime::MoeLayer& layer, const RandomWeights& weights, int tokens,
                                    RoutingKind routing, std::uint64_t seed, const XStyle& style = {}) {
  return check_forward(std::vector<runtime::MoeLayer*>{&layer}, weights, tokens, routing, seed, style).front();
}

}  // namespace moejit::oracle
