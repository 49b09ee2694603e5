#pragma once
// CPU references for the fused MoE layer. They share no code with the kernels.
//
// quantized_reference: the operator's exact semantics on the same quantized
// inputs, accumulated in double:
//   g, u   = W1_gate/up(e) . x_t + b1              (MXFP4 x MXFP8, exact products)
//   g', u' = BF16(min(g, c)), BF16(clamp(u, -c, c))  with c = BF16(clamp)
//   a      = w_tj * act(g', u')                    (Activation above)
//   a_q    = MXFP8(a) per 32 along I (OCP rule), then its BF16 image
//   slot   = BF16(W2(e) . a_q + w_tj * b2)         (so y = sum_j w_tj (W2 act + b2))
//   y_t    = BF16(sum_j slot_j, in FP32, j = 0..k-1); NaN if a route id is outside [0, E)
// With a fused shared expert (MoeProblem::shared_expert) every token has one
// more slot j = k, after the routed ones: expert E of the weights, weight 1.
// quantized_reference_w4a16: the W4A16 recipe (BF16 activations straight into
// GEMM1, as Hopper engines run MXFP4 models): x is BF16 and the intermediate
// is a_q = BF16(a) instead of its MXFP8 requantization; the rest as above.
// dense_reference: the same layer on unquantized FP32 weights and activations.

#include <cstdint>
#include <limits>
#include <vector>

namespace moejit::reference {

// The gated activation on the clamped g, u (c = clamp):
//   swiglu  (the seeds'): g' = min(g, c), u' = clamp(u, -c, c), act = g' sigmoid(g') u'
//   gpt_oss (gpt-oss's):  the same clamps with c = limit, act = g' sigmoid(alpha g') (u' + 1)
enum class Activation { swiglu, gpt_oss };

struct MoeProblem {
  int experts = 0, top_k = 0, hidden = 0, intermediate = 0;
  float clamp = std::numeric_limits<float>::infinity();  // c (gpt-oss: its limit, 7)
  Activation activation = Activation::swiglu;
  float alpha = 1.702f;  // gpt_oss only
  // W1's gate/up rows: false, gate rows 0..I-1 then up rows I..2I-1; true
  // (gpt-oss checkpoints), gate i at row 2i and up i at row 2i+1.
  bool interleaved = false;
  // A fused shared expert: the weights hold E + 1 experts, the last one shared.
  bool shared_expert = false;
};

// Checkpoint-layout MXFP4 weights (DESIGN.md "Weights"), and optional BF16
// biases: b1 per W1 row (in W1's row order), b2 per output row. E' = E + 1
// with a shared expert (the last), else E.
struct CheckpointWeights {
  std::vector<std::uint8_t> w1, s1;   // [E'][2I][H/2], [E'][2I][H/32]
  std::vector<std::uint8_t> w2, s2;   // [E'][H][I/2],  [E'][H][I/32]
  std::vector<std::uint16_t> b1, b2;  // BF16 bits [E'][2I], [E'][H]; empty: no bias
};

struct Routing {
  int tokens = 0;
  std::vector<std::int32_t> ids;  // [B][k]
  std::vector<float> weights;     // [B][k]
};

// x: E4M3 [B][H] and UE8M0 [B][H/32]. Returns BF16 bits [B][H].
std::vector<std::uint16_t> quantized_reference(const MoeProblem& p, const CheckpointWeights& w,
                                               const std::vector<std::uint8_t>& x_q,
                                               const std::vector<std::uint8_t>& x_scales, const Routing& routing,
                                               int threads = 0);

// The layer without activation quantization, BF16 rounding or requantization:
// FP32 activations x [B][H] against the weights' real values, double
// accumulation. Only the tokens listed are computed. Returns [tokens.size()][H].
std::vector<double> dense_reference(const MoeProblem& p, const CheckpointWeights& w, const std::vector<float>& x,
                                    const Routing& routing, const std::vector<int>& tokens, int threads = 0);

// x: BF16 bits [B][H] (the W4A16 recipe). Returns BF16 bits [B][H].
std::vector<std::uint16_t> quantized_reference_w4a16(const MoeProblem& p, const CheckpointWeights& w,
                                                     const std::vector<std::uint16_t>& x_bf16, const Routing& routing,
                                                     int threads = 0);

// Dequantizes checkpoint weights of one projection to FP32 ([E][rows][cols]).
std::vector<float> dequantize_mxfp4(const std::vector<std::uint8_t>& payload, const std::vector<std::uint8_t>& scales,
                                    std::size_t matrices, int rows, int cols);

struct Agreement {
  double cosine = 0;
  double max_abs_error = 0;
  std::size_t nan_or_inf = 0;  // elements of `got` that are not finite
};
Agreement compare(const std::vector<double>& got, const std::vector<double>& want);

}  // namespace moejit::reference
