// Resolving handoff flips against a kernel's output (moe_reference.hpp).
#include <algorithm>
#include <array>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

#include "oracle/moe_reference.hpp"
#include "oracle/mx_format.hpp"
#include "oracle/parallel.hpp"

namespace moejit::reference {
namespace {
// W2's column k of expert e, dequantized, for every h.
void w2_column(const MoeProblem& p, const CheckpointWeights& w, int e, int k, double* out) {
  static const auto e2m1 = [] {
    std::array<double, 16> t{};
    for (int c = 0; c < 16; ++c) t[c] = mx::e2m1_value(static_cast<std::uint8_t>(c));
    return t;
  }();
  static const auto ue8m0 = [] {
    std::array<double, 256> t{};
    for (int c = 0; c < 256; ++c) t[c] = mx::ue8m0_value(static_cast<std::uint8_t>(c));
    return t;
  }();
  for (int h = 0; h < p.hidden; ++h) {
    const std::size_t row = std::size_t(e) * p.hidden + h;
    const std::uint8_t byte = w.w2[row * (p.intermediate / 2) + k / 2];
    out[h] = e2m1[k % 2 ? byte >> 4 : byte & 0xF] * ue8m0[w.s2[row * (p.intermediate / 32) + k / 32]];
  }
}

// How far v may move before its BF16 rounding r can change (0: it may at once). Half the spacing below |r|,
// the smaller one at a power of two, less |v - r|: a lower bound, so a move short of it keeps r.
double bf16_slack(double v, double r) {
  if (r == 0 || !std::isfinite(r)) return 0;
  return std::max(0.0, std::ldexp(1.0, std::ilogb(r) - 9) - std::fabs(v - r));
}

double squared_error(std::uint16_t y, std::uint16_t got) {
  const double g = mx::bf16_value(got);
  if (!std::isfinite(g)) return 0;  // a non-finite output is counted elsewhere
  const double d = mx::bf16_value(y) - g;
  return d * d;
}

// One token's route rows as resolving moves them: the sums, their BF16 roundings and how far each may move.
struct TokenRows {
  int H, K;
  std::vector<double> sums, rounded, slack;  // [K][H]
  TokenRows(const double* first, int H, int K) : H(H), K(K), sums(first, first + std::size_t(K) * H) {
    rounded.resize(sums.size()), slack.resize(sums.size());
    for (int j = 0; j < K; ++j) settle(j);
  }
  void settle(int j) {
    for (std::size_t i = std::size_t(j) * H; i < std::size_t(j + 1) * H; ++i) {
      rounded[i] = mx::round_bf16(sums[i]);
      slack[i] = bf16_slack(sums[i], rounded[i]);
    }
  }
  // The finalize role's y[h] with route row j rounding to r_j instead.
  std::uint16_t output(int h, int j, double r_j) const {
    float sum = 0;
    for (int i = 0; i < K; ++i) sum += static_cast<float>(i == j ? r_j : rounded[std::size_t(i) * H + h]);
    return mx::bf16_bits(sum);
  }
};
}  // namespace

FlipResolution resolve_flips(const QuantizedReference& ref, const MoeProblem& p, const CheckpointWeights& w,
                             const std::vector<std::uint16_t>& got, int threads) {
  const int H = p.hidden, I = p.intermediate, K = ref.slots_per_token;
  FlipResolution out{ref.y, ref.handoff, 0};
  if (got.size() != ref.y.size())
    throw std::invalid_argument(
        fmt::format("resolve_flips: got has {} elements, the reference's y {}", got.size(), ref.y.size()));
  // A token's flips move its outputs only: the tokens resolve independently, each flip in the order found.
  std::vector<std::vector<const HandoffFlip*>> by_token(ref.tokens);
  for (const HandoffFlip& f : ref.flips) by_token[f.slot / K].push_back(&f);
  std::vector<int> taken(ref.tokens, 0);
  parallel_for(ref.tokens, threads, [&](int t) {
    if (by_token[t].empty()) return;
    for (int j = 0; j < K; ++j)
      if (ref.slot_ids[std::size_t(t) * K + j] < 0) return;  // its y is NaN whatever the handoff holds
    TokenRows rows(ref.slot_sums.data() + std::size_t(t) * K * H, H, K);
    std::uint16_t* y = out.y.data() + std::size_t(t) * H;
    const std::uint16_t* mine = got.data() + std::size_t(t) * H;
    std::vector<double> moved(H), column(H);
    std::vector<std::pair<int, std::uint16_t>> changed;  // (h, y[h] with the flip taken)
    // Blocks whose scale code was flipped: their element flips are steps on the old code's grid, so taking one
    // after the rescale would leave the block on two codes, which no kernel can produce.
    std::vector<std::pair<int, int>> rescaled;  // (slot, block)
    for (const HandoffFlip* f : by_token[t]) {
      const std::pair<int, int> at_block{f->slot, f->block};
      if (!f->rescale && std::find(rescaled.begin(), rescaled.end(), at_block) != rescaled.end()) continue;
      const int e = ref.slot_ids[f->slot], j = f->slot % K;
      // The route row's sums move by W2 . (a' - a) over the changed elements.
      std::fill(moved.begin(), moved.end(), 0.0);
      for (const auto& [i, value] : f->values) {
        const int k = 32 * f->block + i;
        const double delta = value - out.handoff[std::size_t(f->slot) * I + k];
        if (delta == 0) continue;
        w2_column(p, w, e, k, column.data());
        for (int h = 0; h < H; ++h) moved[h] += delta * column[h];
      }
      changed.clear();
      double gain = 0;  // squared error saved by taking it
      for (int h = 0; h < H; ++h) {
        const std::size_t at = std::size_t(j) * H + h;
        if (std::fabs(moved[h]) < rows.slack[at]) continue;
        const double r = mx::round_bf16(rows.sums[at] + moved[h]);
        if (r == rows.rounded[at]) continue;
        const std::uint16_t now = rows.output(h, j, r);
        if (now == y[h]) continue;
        changed.emplace_back(h, now);
        gain += squared_error(y[h], mine[h]) - squared_error(now, mine[h]);
      }
      if (!(gain > 0)) continue;
      for (int h = 0; h < H; ++h) rows.sums[std::size_t(j) * H + h] += moved[h];
      rows.settle(j);
      for (const auto& [h, now] : changed) y[h] = now;
      for (const auto& [i, value] : f->values) out.handoff[std::size_t(f->slot) * I + 32 * f->block + i] = value;
      if (f->rescale) rescaled.push_back(at_block);
      ++taken[t];
    }
  });
  for (int n : taken) out.taken += n;
  return out;
}

FlipResolution resolved_reference(const MoeProblem& p, const CheckpointWeights& w, const std::vector<std::uint8_t>& x_q,
                                  const std::vector<std::uint8_t>& x_scales, const Routing& routing,
                                  const std::vector<std::uint16_t>& got, int threads) {
  return resolve_flips(quantized_reference_flips(p, w, x_q, x_scales, routing, threads), p, w, got, threads);
}

}  // namespace moejit::reference
