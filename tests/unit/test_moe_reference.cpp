// The CPU references on a small layer: the quantized reference tracks the
// unquantized one to within the quantization error, and a route id outside
// [0, E) poisons exactly its token.
#include <doctest/doctest.h>

#include <cmath>
#include <random>

#include "oracle/moe_reference.hpp"
#include "oracle/mx_format.hpp"

using namespace moejit;

TEST_CASE("quantized reference vs dense reference on Gaussian weights") {
  const reference::MoeProblem p{4, 2, 512, 256, 10.0f};
  std::mt19937 rng(std::random_device{}());
  std::normal_distribution<float> normal(0.0f, 1.0f);
  auto gaussian = [&](std::size_t n, float sigma) {
    std::vector<float> v(n);
    for (float& x : v) x = sigma * normal(rng);
    return v;
  };
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
