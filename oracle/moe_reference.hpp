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
#include <utility>
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

// Handoff flips (docs/numerics.md "Handoff flips"). The MXFP8 requantization
// of GEMM1's output is a step function: where the double GEMM1 value lies
// within FP32 summation error of a step (an E4M3 rounding boundary, one of
// g's or u's BF16 boundaries that moves a across one, or a power of two that
// sets its block's scale code), a kernel summing in FP32 may land on the
// neighbouring MXFP8 value, one step (6-12%) away, and still compute the
// operator. "Within" is kFlipTolerance x |W1 row| |x_t| on g and u, and
// kActivationTolerance relative on a: an empirical margin (~16x an FP32 sum's
// random-walk error over H products, since |W1 row| |x_t| bounds the sum of
// |products|), not a bound for every summation order.
inline constexpr double kFlipTolerance = 0x1p-20;
inline constexpr double kActivationTolerance = 0x1p-20;

struct HandoffFlip {
  int slot = 0;   // route row t*k' + j (k' = k + 1 with a shared expert, its slot last)
  int block = 0;  // 32-element block of I
  // (element of the block, BF16 image of its MXFP8 value on the other side):
  // one element, or all 32 under the neighbouring scale code (rescale).
  std::vector<std::pair<int, double>> values;
  bool rescale = false;
};

// The quantized reference with what resolve_flips needs: y takes each step
// as the double GEMM1 value decides.
struct QuantizedReference {
  std::vector<std::uint16_t> y;  // BF16 bits [B][H]
  std::vector<HandoffFlip> flips;
  int tokens = 0, slots_per_token = 0;  // B, k'
  std::vector<std::int32_t> slot_ids;   // [B*k'] expert of each route row (the shared one is E), -1 outside [0, E)
  std::vector<double> handoff;          // [B*k'][I] BF16 images of the MXFP8 intermediate
  std::vector<double> slot_sums;        // [B*k'][H] W2 . a_q + w b2, before the route row's BF16 rounding
};
// `twin_jitter` > 0 makes it a twin of a kernel instead: g and u move by up
// to twin_jitter x their tolerance (a hash of twin_seed and the element picks
// how far), so its steps fall where an FP32 GEMM1's may. Its tests only.
QuantizedReference quantized_reference_flips(const MoeProblem& p, const CheckpointWeights& w,
                                             const std::vector<std::uint8_t>& x_q,
                                             const std::vector<std::uint8_t>& x_scales, const Routing& routing,
                                             int threads = 0, double twin_jitter = 0, std::uint64_t twin_seed = 0);

struct FlipResolution {
  std::vector<std::uint16_t> y;  // BF16 bits [B][H]
  std::vector<double> handoff;   // QuantizedReference::handoff with the flips taken
  int taken = 0;                 // flips whose other side brought y nearer to `got`
};
// Takes, one at a time in order, each flip whose other side brings its
// token's H outputs nearer to `got` (squared error; non-finite outputs left
// out); tokens in parallel. Only the neighbouring MXFP8 value of a flagged element or block can
// be taken, so a kernel wrong elsewhere comes nearer by no more than those steps absorb. After a
// block's rescale is taken its element flips are skipped. Throws if got's size is not y's.
FlipResolution resolve_flips(const QuantizedReference& ref, const MoeProblem& p, const CheckpointWeights& w,
                             const std::vector<std::uint16_t>& got, int threads = 0);
// The finalize role's rule for one output element: BF16 of the FP32 sum, in
// slot order, of each route row's BF16 rounding (slot_sums[j * stride]).
std::uint16_t finalize_element(const double* slot_sums, std::size_t stride, int slots);
// quantized_reference_flips then resolve_flips against `got`.
FlipResolution resolved_reference(const MoeProblem& p, const CheckpointWeights& w, const std::vector<std::uint8_t>& x_q,
                                  const std::vector<std::uint8_t>& x_scales, const Routing& routing,
                                  const std::vector<std::uint16_t>& got, int threads = 0);

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
