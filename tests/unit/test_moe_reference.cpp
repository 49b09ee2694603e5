// The CPU references on a small layer: the quantized reference tracks the
// unquantized one to within the quantization error, and a route id outside
// [0, E) poisons exactly its token.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "oracle/moe_reference.hpp"
#include "oracle/mx_format.hpp"

using namespace moejit;

namespace {
std::vector<float> gaussian_values(std::mt19937& rng, std::size_t n, float sigma) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = sigma * normal(rng);
  return v;
}
}  // namespace

TEST_CASE("quantized reference vs dense reference on Gaussian weights") {
  const reference::MoeProblem p{4, 2, 512, 256, 10.0f};
  std::mt19937 rng(std::random_device{}());
  auto gaussian = [&](std::size_t n, float sigma) { return gaussian_values(rng, n, sigma); };
  const std::vector<float> w1 = gaussian(std::size_t(p.experts) * 2 * p.intermediate * p.hidden, 0.03f);
  const std::vector<float> w2 = gaussian(std::size_t(p.experts) * p.hidden * p.intermediate, 0.03f);
  const mx::MxMatrix q1 = mx::quantize_mxfp4(w1, p.experts * 2 * p.intermediate, p.hidden);
  const mx::MxMatrix q2 = mx::quantize_mxfp4(w2, p.experts * p.hidden, p.intermediate);
  reference::CheckpointWeights w{q1.elements, q1.scales, q2.elements, q2.scales};

  const int tokens = 6;
  std::vector<float> x = gaussian(std::size_t(tokens) * p.hidden, 1.0f);
  for (float& v : x) v = static_cast<float>(mx::round_bf16(v));
  const mx::MxMatrix xq = mx::quantize_mxfp8(x, tokens, p.hidden);
  reference::Routing r{tokens, {0, 1, 1, 2, 2, 3, 3, 0, 0, 2, 1, 3}, std::vector<float>(12, 0.5f)};
  const std::vector<std::uint16_t> yq = reference::quantized_reference(p, w, xq.elements, xq.scales, r);

  std::vector<double> got(yq.size());
  for (std::size_t i = 0; i < yq.size(); ++i) got[i] = mx::bf16_value(yq[i]);
  // dense_reference dequantizes checkpoint weights, so give it the MXFP4 grid; the
  // weight error is measured separately below.
  const std::vector<double> dense = reference::dense_reference(p, w, x, r, {0, 1, 2, 3, 4, 5});
  const reference::Agreement a = reference::compare(got, dense);
  CHECK(a.nan_or_inf == 0);
  CHECK(a.cosine >= 0.99);
  CHECK(a.cosine < 1.0);  // activation and act quantization must show
  // MXFP4 of Gaussian weights: the quantization error itself.
  const std::vector<float> w1_back =
      reference::dequantize_mxfp4(q1.elements, q1.scales, p.experts, 2 * p.intermediate, p.hidden);
  std::vector<double> a1(w1.begin(), w1.end()), b1(w1_back.begin(), w1_back.end());
  const double weight_cos = reference::compare(b1, a1).cosine;
  CHECK(weight_cos > 0.97);
  CHECK(weight_cos < 0.999);
}

TEST_CASE("a route id outside [0, E) poisons its token only") {
  const reference::MoeProblem p{2, 2, 512, 256, 10.0f};
  reference::CheckpointWeights w;
  w.w1.assign(std::size_t(p.experts) * 2 * p.intermediate * p.hidden / 2, 0x21);
  w.s1.assign(w.w1.size() / 16, 120);
  w.w2.assign(std::size_t(p.experts) * p.hidden * p.intermediate / 2, 0x12);
  w.s2.assign(w.w2.size() / 16, 120);
  const int tokens = 2;
  std::vector<std::uint8_t> xq(std::size_t(tokens) * p.hidden, 0x38), xs(std::size_t(tokens) * p.hidden / 32, 127);
  reference::Routing r{tokens, {0, 1, 1, 7}, {0.5f, 0.5f, 0.5f, 0.5f}};
  const auto y = reference::quantized_reference(p, w, xq, xs, r);
  CHECK(std::isfinite(mx::bf16_value(y[0])));
  CHECK(std::isnan(mx::bf16_value(y[p.hidden])));
}

// gpt-oss's MoE block, evaluated here from its published formula and written
// apart from the reference (its own E2M1 table, its own row order and bias
// handling), in double: y_t = sum_j w_tj (W2_e act(W1_e x_t + b1_e) + b2_e),
// gate i at W1 row 2i, up i at row 2i+1, act = min(g, L) sigmoid(a min(g, L))
// (clamp(u, -L, L) + 1), a = 1.702, L = 7 (issue 14, acceptance 3).
namespace {
double e2m1(std::uint8_t nibble) {
  static const double mag[8] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
  return (nibble & 8 ? -1.0 : 1.0) * mag[nibble & 7];
}
double weight(const std::vector<std::uint8_t>& payload, const std::vector<std::uint8_t>& scales, std::size_t row,
              int col, int cols) {
  const std::uint8_t byte = payload[row * (cols / 2) + col / 2];
  return e2m1(col % 2 ? byte >> 4 : byte & 0xF) * std::pow(2.0, int(scales[row * (cols / 32) + col / 32]) - 127);
}
double bf16(std::uint16_t bits) {
  std::uint32_t u = std::uint32_t(bits) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
// Random checkpoint weights of `p` with scale codes in [code_lo, code_hi] and
// normal BF16 biases of deviation `bias_sigma` on both projections.
reference::CheckpointWeights random_checkpoint(const reference::MoeProblem& p, std::mt19937& rng, int code_lo,
                                               int code_hi, double bias_sigma) {
  const int E = p.experts, H = p.hidden, I = p.intermediate;
  std::uniform_int_distribution<int> byte(0, 255), code(code_lo, code_hi);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  reference::CheckpointWeights w;
  w.w1.resize(std::size_t(E) * 2 * I * H / 2);
  w.s1.resize(std::size_t(E) * 2 * I * H / 32);
  w.w2.resize(std::size_t(E) * H * I / 2);
  w.s2.resize(std::size_t(E) * H * I / 32);
  for (auto* v : {&w.w1, &w.w2})
    for (auto& b : *v) b = std::uint8_t(byte(rng));
  for (auto* v : {&w.s1, &w.s2})
    for (auto& b : *v) b = std::uint8_t(code(rng));
  w.b1.resize(std::size_t(E) * 2 * I);
  w.b2.resize(std::size_t(E) * H);
  for (auto* v : {&w.b1, &w.b2})
    for (auto& b : *v) b = mx::bf16_bits(bias_sigma * normal(rng));
  return w;
}
}  // namespace

TEST_CASE("gpt-oss block: the dense reference is the published formula; the quantized one tracks it") {
  reference::MoeProblem p{4, 2, 128, 64, 7.0f};
  p.activation = reference::Activation::gpt_oss;
  p.alpha = 1.702f;
  p.interleaved = true;
  const int H = p.hidden, I = p.intermediate, K = p.top_k, B = 3;
  std::mt19937 rng(20261201);
  const reference::CheckpointWeights w = random_checkpoint(p, rng, 120, 124, 0.5);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(std::size_t(B) * H);
  for (float& v : x) v = static_cast<float>(mx::round_bf16(2.0 * normal(rng)));
  reference::Routing r{B, {0, 3, 2, 1, 3, 2}, {0.7f, 0.3f, 0.5f, 0.5f, 0.9f, 0.1f}};

  std::vector<double> want(std::size_t(B) * H, 0.0);
  for (int t = 0; t < B; ++t)
    for (int j = 0; j < K; ++j) {
      const int e = r.ids[std::size_t(t) * K + j];
      std::vector<double> act(I);
      for (int i = 0; i < I; ++i) {
        double g = bf16(w.b1[std::size_t(e) * 2 * I + 2 * i]), u = bf16(w.b1[std::size_t(e) * 2 * I + 2 * i + 1]);
        for (int h = 0; h < H; ++h) {
          g += weight(w.w1, w.s1, std::size_t(e) * 2 * I + 2 * i, h, H) * x[std::size_t(t) * H + h];
          u += weight(w.w1, w.s1, std::size_t(e) * 2 * I + 2 * i + 1, h, H) * x[std::size_t(t) * H + h];
        }
        g = std::min(g, 7.0);
        u = std::max(-7.0, std::min(u, 7.0));
        act[i] = g / (1.0 + std::exp(-1.702 * g)) * (u + 1.0);
      }
      for (int h = 0; h < H; ++h) {
        double o = bf16(w.b2[std::size_t(e) * H + h]);
        for (int i = 0; i < I; ++i) o += weight(w.w2, w.s2, std::size_t(e) * H + h, i, I) * act[i];
        want[std::size_t(t) * H + h] += double(r.weights[std::size_t(t) * K + j]) * o;
      }
    }

  const std::vector<double> dense = reference::dense_reference(p, w, x, r, {0, 1, 2});
  double worst = 0, scale = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    worst = std::max(worst, std::fabs(dense[i] - want[i]));
    scale = std::max(scale, std::fabs(want[i]));
  }
  MESSAGE("gpt-oss dense reference vs the formula: max |diff| " << worst << " at max |y| " << scale);
  CHECK(scale > 1.0);
  CHECK(worst <= 1e-9 * scale);

  // The quantized semantics (MXFP8 x, BF16 g'/u', MXFP8 act, BF16 slots) stay close to it.
  const mx::MxMatrix xq = mx::quantize_mxfp8(x, B, H);
  const std::vector<std::uint16_t> yq = reference::quantized_reference(p, w, xq.elements, xq.scales, r);
  std::vector<double> got(yq.size());
  for (std::size_t i = 0; i < yq.size(); ++i) got[i] = mx::bf16_value(yq[i]);
  const reference::Agreement a = reference::compare(got, want);
  MESSAGE("gpt-oss quantized reference vs the formula: cosine " << a.cosine);
  CHECK(a.nan_or_inf == 0);
  CHECK(a.cosine >= 0.99);

  // And the layout matters: the same bytes read as gate/up halves give another block.
  reference::MoeProblem halves = p;
  halves.interleaved = false;
  CHECK(reference::compare(reference::dense_reference(halves, w, x, r, {0, 1, 2}), want).cosine < 0.9);
}

// The W4A16 recipe (issue 14), from its definition and written apart from the
// reference: BF16 x straight into GEMM1, g' and u' rounded to BF16, the
// route-weighted activation rounded to BF16 (no MXFP8 anywhere), BF16 slot
// rows, their FP32 sum in slot order rounded to BF16. Bit for bit.
namespace {
double round_bf16_rne(double v) {  // one rounding from double: 8 significant bits, ties to even
  if (v == 0 || !std::isfinite(v)) return v;
  int e = 0;
  const double m = std::frexp(v, &e);  // |m| in [0.5, 1)
  return std::ldexp(std::nearbyint(std::ldexp(m, 8)), e - 8);
}
}  // namespace

TEST_CASE("W4A16 recipe: the reference is its definition, bit for bit, and differs from W4A8") {
  reference::MoeProblem p{4, 2, 128, 64, 10.0f};
  const int H = p.hidden, I = p.intermediate, K = p.top_k, B = 3;
  std::mt19937 rng(20261202);
  const reference::CheckpointWeights w = random_checkpoint(p, rng, 118, 124, 0.25);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  // Activations over 12 octaves, so BF16 keeps what MXFP8 would round away.
  std::vector<std::uint16_t> x(std::size_t(B) * H);
  std::vector<float> xf(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    x[i] = mx::bf16_bits(normal(rng) * std::ldexp(1.0, int(i % 12) - 6));
    xf[i] = static_cast<float>(bf16(x[i]));
  }
  reference::Routing r{B, {0, 3, 2, 1, 3, 3}, {0.7f, 0.3f, 0.5f, 0.5f, 0.9f, 0.1f}};

  const double c = round_bf16_rne(10.0);
  std::vector<std::uint16_t> want(std::size_t(B) * H);
  for (int t = 0; t < B; ++t) {
    std::vector<float> sum(H, 0.0f);
    for (int j = 0; j < K; ++j) {
      const int e = r.ids[std::size_t(t) * K + j];
      const double wt = r.weights[std::size_t(t) * K + j];
      std::vector<double> a(I);
      for (int i = 0; i < I; ++i) {
        const std::size_t gate_row = std::size_t(e) * 2 * I + i, up_row = gate_row + I;  // gate/up halves
        double g = 0, u = 0;
        for (int h = 0; h < H; ++h) {
          g += weight(w.w1, w.s1, gate_row, h, H) * bf16(x[std::size_t(t) * H + h]);
          u += weight(w.w1, w.s1, up_row, h, H) * bf16(x[std::size_t(t) * H + h]);
        }
        g += bf16(w.b1[gate_row]);
        u += bf16(w.b1[up_row]);
        const double gc = round_bf16_rne(std::min(g, c)), uc = round_bf16_rne(std::max(-c, std::min(u, c)));
        a[i] = round_bf16_rne(wt * (gc / (1.0 + std::exp(-gc)) * uc));
      }
      for (int h = 0; h < H; ++h) {
        double o = 0;
        for (int i = 0; i < I; ++i) o += weight(w.w2, w.s2, std::size_t(e) * H + h, i, I) * a[i];
        sum[h] += static_cast<float>(round_bf16_rne(o + wt * bf16(w.b2[std::size_t(e) * H + h])));
      }
    }
    for (int h = 0; h < H; ++h) want[std::size_t(t) * H + h] = mx::bf16_bits(round_bf16_rne(sum[h]));
  }

  const std::vector<std::uint16_t> got = reference::quantized_reference_w4a16(p, w, x, r);
  int differ = 0;
  for (std::size_t i = 0; i < want.size(); ++i) differ += got[i] != want[i];
  MESSAGE("W4A16 reference vs its definition: " << differ << " of " << want.size() << " outputs differ");
  CHECK(differ == 0);

  // The recipe is not W4A8 under another name: MXFP8 on x and on the intermediate moves the outputs.
  const mx::MxMatrix xq = mx::quantize_mxfp8(xf, B, H);
  const std::vector<std::uint16_t> w4a8 = reference::quantized_reference(p, w, xq.elements, xq.scales, r);
  int moved = 0;
  for (std::size_t i = 0; i < want.size(); ++i) moved += w4a8[i] != want[i];
  MESSAGE("W4A8 on the MXFP8 of the same x: " << moved << " of " << want.size() << " outputs differ");
  CHECK(moved > int(want.size()) / 4);
}

TEST_CASE("fused shared expert: one more slot of weight 1 on expert E, added after the routed slots") {
  reference::MoeProblem p{4, 2, 512, 256, 10.0f};
  p.shared_expert = true;
  std::mt19937 rng(std::random_device{}());
  auto gaussian = [&](std::size_t n, float sigma) { return gaussian_values(rng, n, sigma); };
  const int E = p.experts + 1, H = p.hidden, I = p.intermediate;  // the weights hold the shared expert last
  const mx::MxMatrix q1 = mx::quantize_mxfp4(gaussian(std::size_t(E) * 2 * I * H, 0.03f), E * 2 * I, H);
  const mx::MxMatrix q2 = mx::quantize_mxfp4(gaussian(std::size_t(E) * H * I, 0.03f), E * H, I);
  const reference::CheckpointWeights w{q1.elements, q1.scales, q2.elements, q2.scales};
  const int tokens = 5;
  std::vector<float> x = gaussian(std::size_t(tokens) * H, 1.0f);
  for (float& v : x) v = static_cast<float>(mx::round_bf16(v));
  const mx::MxMatrix xq = mx::quantize_mxfp8(x, tokens, H);
  const reference::Routing r{
      tokens, {0, 1, 1, 2, 2, 3, 3, 0, 0, 2}, {0.5f, 0.25f, 0.75f, 0.5f, 1.0f, 0.125f, 0.5f, 0.5f, 2.0f, 0.25f}};
  const std::vector<std::uint16_t> y = reference::quantized_reference(p, w, xq.elements, xq.scales, r);

  // The same layer written out: E + 1 experts, k + 1 slots, slot k on expert E with weight 1.
  reference::MoeProblem explicit_p = p;
  explicit_p.experts = E, explicit_p.top_k = 3, explicit_p.shared_expert = false;
  reference::Routing explicit_r{tokens, {}, {}};
  for (int t = 0; t < tokens; ++t) {
    for (int j = 0; j < 2; ++j) {
      explicit_r.ids.push_back(r.ids[2 * t + j]);
      explicit_r.weights.push_back(r.weights[2 * t + j]);
    }
    explicit_r.ids.push_back(p.experts);
    explicit_r.weights.push_back(1.0f);
  }
  CHECK(y == reference::quantized_reference(explicit_p, w, xq.elements, xq.scales, explicit_r));

  // Unquantized: the layer with the shared expert is the routed layer plus the shared expert alone, at weight 1.
  reference::MoeProblem routed = p, alone = p;
  routed.shared_expert = false;
  alone.shared_expert = false, alone.experts = 1, alone.top_k = 1;
  const std::size_t w1_expert = std::size_t(2) * I * H, w2_expert = std::size_t(H) * I;
  auto slice = [](const std::vector<std::uint8_t>& v, std::size_t from) {
    return std::vector<std::uint8_t>(v.begin() + from, v.end());
  };
  const reference::CheckpointWeights shared_only{
      slice(w.w1, p.experts * w1_expert / 2), slice(w.s1, p.experts * w1_expert / 32),
      slice(w.w2, p.experts * w2_expert / 2), slice(w.s2, p.experts * w2_expert / 32)};
  const reference::Routing to_it{tokens, std::vector<std::int32_t>(tokens, 0), std::vector<float>(tokens, 1.0f)};
  const std::vector<int> all = {0, 1, 2, 3, 4};
  const std::vector<double> with = reference::dense_reference(p, w, x, r, all);
  const std::vector<double> without = reference::dense_reference(routed, w, x, r, all);
  const std::vector<double> shared = reference::dense_reference(alone, shared_only, x, to_it, all);
  double worst = 0, scale = 0;
  for (std::size_t i = 0; i < with.size(); ++i) {
    worst = std::max(worst, std::fabs(with[i] - (without[i] + shared[i])));
    scale = std::max(scale, std::fabs(shared[i]));
  }
  CHECK(scale > 0.0);
  CHECK(worst <= 1e-9 * std::max(1.0, scale));

  // A routed id of E (the shared expert's index) is still outside [0, E): its token is poisoned.
  reference::Routing bad = r;
  bad.ids[3] = p.experts;
  const std::vector<std::uint16_t> yb = reference::quantized_reference(p, w, xq.elements, xq.scales, bad);
  for (int t = 0; t < tokens; ++t)
    for (int h = 0; h < H; ++h)
      CHECK_MESSAGE((std::isnan(mx::bf16_value(yb[std::size_t(t) * H + h])) == (t == 1)), "token " << t);
}
