#include "oracle/moe_reference.hpp"

#include <algorithm>
#include <array>
#include <cmath>

#include "oracle/mx_format.hpp"
#include "oracle/parallel.hpp"

namespace moejit::reference {
namespace {
// One row of an MXFP4 checkpoint matrix as doubles. Both references spend
// much of their time here: a byte's two E2M1 values come from a table, and
// the UE8M0 scale is decoded once per 32-element block.
void dequantize_row(const std::uint8_t* payload, const std::uint8_t* scales, int cols, double* out) {
  static const auto pairs = [] {
    std::array<std::array<double, 2>, 256> t{};
    for (int b = 0; b < 256; ++b)
      t[b] = {mx::e2m1_value(static_cast<std::uint8_t>(b & 0xF)), mx::e2m1_value(static_cast<std::uint8_t>(b >> 4))};
    return t;
  }();
  for (int block = 0; block < cols / 32; ++block) {
    const double scale = mx::ue8m0_value(scales[block]);
    const std::uint8_t* bytes = payload + block * 16;
    double* o = out + block * 32;
    for (int i = 0; i < 16; ++i) {
      o[2 * i] = pairs[bytes[i]][0] * scale;
      o[2 * i + 1] = pairs[bytes[i]][1] * scale;
    }
  }
}

// Double dot product with independent partial sums: the reference's cost is
// dominated by this loop, and one dependency chain would leave the FPU idle.
double dot(const double* a, const double* b, int n) {
  double s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int i = 0;
  for (; i + 8 <= n; i += 8)
    for (int l = 0; l < 8; ++l) s[l] += a[i + l] * b[i + l];
  for (; i < n; ++i) s[0] += a[i] * b[i];
  return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
}

double gated(const MoeProblem& p, double g, double u) {
  if (p.activation == Activation::gpt_oss) return g / (1.0 + std::exp(-double(p.alpha) * g)) * (u + 1.0);
  return g / (1.0 + std::exp(-g)) * u;
}

// W1's row of gate (half 0) or up (half 1) element i of expert e.
std::size_t w1_row(const MoeProblem& p, int e, int i, int half) {
  const int r = p.interleaved ? 2 * i + half : i + half * p.intermediate;
  return std::size_t(e) * 2 * p.intermediate + r;
}

double bias(const std::vector<std::uint16_t>& b, std::size_t index) {
  return b.empty() ? 0.0 : mx::bf16_value(b[index]);
}

// The shared expert as one more slot: expert E, slot k of every token, weight
// 1. A routed id outside [0, E) (E included) becomes -1, so the token stays
// poisoned. Without a shared expert, the problem and routing as they are.
struct Slots {
  MoeProblem p;
  Routing routing;
};
Slots with_shared_slot(const MoeProblem& p, const Routing& routing) {
  if (!p.shared_expert) return {p, routing};
  const int E = p.experts, K = p.top_k, B = routing.tokens;
  Slots s{
      p, Routing{B, std::vector<std::int32_t>(std::size_t(B) * (K + 1)), std::vector<float>(std::size_t(B) * (K + 1))}};
  s.p.experts = E + 1, s.p.top_k = K + 1, s.p.shared_expert = false;
  for (int t = 0; t < B; ++t) {
    for (int j = 0; j < K; ++j) {
      const std::int32_t id = routing.ids[std::size_t(t) * K + j];
      s.routing.ids[std::size_t(t) * (K + 1) + j] = id >= 0 && id < E ? id : -1;
      s.routing.weights[std::size_t(t) * (K + 1) + j] = routing.weights[std::size_t(t) * K + j];
    }
    s.routing.ids[std::size_t(t) * (K + 1) + K] = E;
    s.routing.weights[std::size_t(t) * (K + 1) + K] = 1.0f;
  }
  return s;
}

// NaN where a route id is outside [0, E), else finalize_element on each h. `sums` [B*k][H].
bool token_poisoned(const Routing& routing, int E, int t) {
  const int K = static_cast<int>(routing.ids.size() / std::max(1, routing.tokens));
  for (int j = 0; j < K; ++j)
    if (routing.ids[size_t(t) * K + j] < 0 || routing.ids[size_t(t) * K + j] >= E) return true;
  return false;
}
std::vector<std::uint16_t> combine_slots(const std::vector<double>& sums, const Routing& routing, int E, int H) {
  const int B = routing.tokens, K = static_cast<int>(routing.ids.size() / std::max(1, B));
  std::vector<std::uint16_t> y(size_t(B) * H);
  for (int t = 0; t < B; ++t) {
    const bool poisoned = token_poisoned(routing, E, t);
    for (int h = 0; h < H; ++h)
      y[size_t(t) * H + h] = poisoned ? 0x7FC0 : finalize_element(&sums[size_t(t) * K * H + h], H, K);
  }
  return y;
}

// How the intermediate a reaches GEMM2: the w4a8 recipe's MXFP8 (kept as the
// BF16 image the kernels hand off), or the w4a16 recipe's BF16.
enum class Intermediate { mxfp8, bf16 };

// What quantized_reference_flips asks of the layer beside y.
struct FlipTrace {
  QuantizedReference* out = nullptr;  // flips, handoff and slot sums go here
  double twin_jitter = 0;
  std::uint64_t twin_seed = 0;
};

// A value in [-1, 1) from a hash of (seed, a, b): the twin's jitter.
double jitter_unit(std::uint64_t seed, std::uint64_t a, std::uint64_t b) {
  std::uint64_t z = seed ^ (a * 0x9E3779B97F4A7C15ull) ^ (b * 0xC2B2AE3D27D4EB4Full);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) * 0x1p-52 - 1.0;
}

// BF16 images of a's MXFP8 value: scale code `code`, then E4M3.
double mxfp8_image(double a, std::uint8_t code) {
  return mx::round_bf16(mx::e4m3_value(mx::e4m3_encode(a * std::ldexp(1.0, 127 - code))) * mx::ue8m0_value(code));
}

// The flips of one 32-element block (values a, each in [lo, hi] under FP32 error).
void block_flips(const double* a, const double* lo, const double* hi, std::uint8_t code, int slot, int block,
                 std::vector<HandoffFlip>& flips) {
  double amax_lo = 0, amax_hi = 0;
  for (int i = 0; i < 32; ++i) {
    amax_hi = std::max({amax_hi, std::fabs(lo[i]), std::fabs(hi[i])});
    if (lo[i] > 0 || hi[i] < 0) amax_lo = std::max(amax_lo, std::min(std::fabs(lo[i]), std::fabs(hi[i])));
  }
  // The block's rescales first, then its element steps: resolve_flips skips a block's element steps once one
  // of its rescales is taken, which needs this order.
  for (const std::uint8_t other : {mx::block_scale_code(amax_lo, 8), mx::block_scale_code(amax_hi, 8)}) {
    if (other == code) continue;
    HandoffFlip f{slot, block, {}, true};
    for (int i = 0; i < 32; ++i) f.values.emplace_back(i, mxfp8_image(a[i], other));
    flips.push_back(std::move(f));
  }
  // Every E4M3 value between those of lo and hi (a small |a| may reach several steps: the tolerance is absolute).
  const double scale = mx::ue8m0_value(code);
  for (int i = 0; i < 32; ++i) {
    const double nominal = mxfp8_image(a[i], code), down = mxfp8_image(lo[i], code), up = mxfp8_image(hi[i], code);
    if (down == up) continue;
    for (int byte = 0; byte < 256; ++byte) {
      const double v = mx::e4m3_value(static_cast<std::uint8_t>(byte));
      if (std::isnan(v) || (v == 0 && byte != 0)) continue;  // NaN; -0 is +0's image
      const double image = mx::round_bf16(v * scale);
      if (image >= down && image <= up && image != nominal) flips.push_back({slot, block, {{i, image}}});
    }
  }
}

// The layer on activations x [B][H] already in the recipe's values.
std::vector<std::uint16_t> layer_reference(const MoeProblem& problem, const CheckpointWeights& w,
                                           const std::vector<double>& x, Intermediate intermediate,
                                           const Routing& given, int threads, const FlipTrace& trace = {}) {
  const Slots with_shared = with_shared_slot(problem, given);
  const MoeProblem& p = with_shared.p;
  const Routing& routing = with_shared.routing;
  const int E = p.experts, K = p.top_k, H = p.hidden, I = p.intermediate, B = routing.tokens;
  const bool flips = trace.out && intermediate == Intermediate::mxfp8;

  std::vector<std::vector<int>> routes(E);  // route index t*k+j per expert
  for (int r = 0; r < B * K; ++r)
    if (routing.ids[r] >= 0 && routing.ids[r] < E) routes[routing.ids[r]].push_back(r);
  std::vector<int> active;
  for (int e = 0; e < E; ++e)
    if (!routes[e].empty()) active.push_back(e);
  std::vector<double> x_norm(B);  // |x_t|, for the flips' tolerance
  for (int t = 0; t < B; ++t) x_norm[t] = std::sqrt(dot(x.data() + size_t(t) * H, x.data() + size_t(t) * H, H));

  const double c = mx::round_bf16(p.clamp);
  // Work items are (active expert, chunk of 32 output rows: H and I are
  // multiples of 32), so a skewed routing with a few hot experts still uses every thread.
  constexpr int kChunk = 32;
  std::vector<std::vector<double>> act(E), act_lo(E), act_hi(E);  // [routes of e][I]; lo/hi: FP32 error's reach
  for (int e : active) {
    act[e].assign(routes[e].size() * I, 0.0);
    if (flips) act_lo[e] = act_hi[e] = act[e];
  }
  const int chunks1 = I / kChunk, chunks2 = H / kChunk;
  parallel_for(static_cast<int>(active.size()) * chunks1, threads, [&](int task) {
    const int e = active[task / chunks1];
    const std::vector<int>& rs = routes[e];
    std::vector<double> row(H);
    std::vector<double> gate(rs.size()), up(rs.size()), gate_tol(rs.size()), up_tol(rs.size());
    for (int i = (task % chunks1) * kChunk; i < (task % chunks1 + 1) * kChunk; ++i) {
      for (int half = 0; half < 2; ++half) {
        const size_t r = w1_row(p, e, i, half);
        dequantize_row(w.w1.data() + r * (H / 2), w.s1.data() + r * (H / 32), H, row.data());
        const double b = bias(w.b1, r);
        const double row_norm = trace.out ? std::sqrt(dot(row.data(), row.data(), H)) : 0.0;
        for (size_t q = 0; q < rs.size(); ++q) {
          const double tol = kFlipTolerance * row_norm * x_norm[rs[q] / K];
          double v = dot(row.data(), x.data() + size_t(rs[q] / K) * H, H) + b;
          if (trace.twin_jitter > 0) v += trace.twin_jitter * tol * jitter_unit(trace.twin_seed, rs[q], 2 * i + half);
          (half ? up : gate)[q] = v;
          (half ? up_tol : gate_tol)[q] = tol;
        }
      }
      for (size_t q = 0; q < rs.size(); ++q) {
        const auto g_of = [&](double g) { return mx::round_bf16(g > c ? c : g); };
        const auto u_of = [&](double u) { return mx::round_bf16(u > c ? c : (u < -c ? -c : u)); };
        const double wt = routing.weights[rs[q]];
        act[e][q * I + i] = wt * gated(p, g_of(gate[q]), u_of(up[q]));
        if (!flips) continue;
        double lo = act[e][q * I + i], hi = lo;
        for (double dg : {-1.0, 1.0})
          for (double du : {-1.0, 1.0}) {
            const double a = wt * gated(p, g_of(gate[q] + dg * gate_tol[q]), u_of(up[q] + du * up_tol[q]));
            lo = std::min(lo, a), hi = std::max(hi, a);
          }
        act_lo[e][q * I + i] = lo - std::fabs(lo) * kActivationTolerance;
        act_hi[e][q * I + i] = hi + std::fabs(hi) * kActivationTolerance;
      }
    }
  });
  // MXFP8 requantization along I, kept as the BF16 image the kernels hand off; or BF16.
  std::vector<HandoffFlip> found;
  for (int e : active) {
    if (intermediate == Intermediate::bf16) {
      for (double& v : act[e]) v = mx::round_bf16(v);
      continue;
    }
    for (size_t q = 0; q < routes[e].size(); ++q) {
      for (int b = 0; b < I / 32; ++b) {
        double* block = act[e].data() + q * I + 32 * b;
        double amax = 0;
        for (int i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(block[i]));
        const std::uint8_t code = mx::block_scale_code(amax, 8);
        if (flips)
          block_flips(block, act_lo[e].data() + q * I + 32 * b, act_hi[e].data() + q * I + 32 * b, code, routes[e][q],
                      b, found);
        for (int i = 0; i < 32; ++i) block[i] = mxfp8_image(block[i], code);
      }
    }
  }
  // GEMM2 -> BF16 slot rows.
  std::vector<double> sums(size_t(B) * K * H, 0.0);
  parallel_for(static_cast<int>(active.size()) * chunks2, threads, [&](int task) {
    const int e = active[task / chunks2];
    const std::vector<int>& rs = routes[e];
    std::vector<double> row(I);
    for (int h = (task % chunks2) * kChunk; h < (task % chunks2 + 1) * kChunk; ++h) {
      const size_t r = size_t(e) * H + h;
      dequantize_row(w.w2.data() + r * (I / 2), w.s2.data() + r * (I / 32), I, row.data());
      const double b = bias(w.b2, r);
      for (size_t q = 0; q < rs.size(); ++q)
        sums[size_t(rs[q]) * H + h] = dot(row.data(), act[e].data() + q * I, I) + routing.weights[rs[q]] * b;
    }
  });
  std::vector<std::uint16_t> y = combine_slots(sums, routing, E, H);
  if (trace.out) {
    QuantizedReference& out = *trace.out;
    out.tokens = B, out.slots_per_token = K;
    out.slot_ids.assign(routing.ids.begin(), routing.ids.end());
    for (auto& id : out.slot_ids) id = id >= 0 && id < E ? id : -1;
    out.handoff.assign(size_t(B) * K * I, 0.0);
    for (int e : active)
      for (size_t q = 0; q < routes[e].size(); ++q)
        std::copy_n(act[e].begin() + q * I, I, out.handoff.begin() + size_t(routes[e][q]) * I);
    out.slot_sums = std::move(sums);
    out.flips = std::move(found);
    out.y = y;
  }
  return y;
}
}  // namespace

std::vector<std::uint16_t> quantized_reference(const MoeProblem& p, const CheckpointWeights& w,
                                               const std::vector<std::uint8_t>& x_q,
                                               const std::vector<std::uint8_t>& x_scales, const Routing& routing,
                                               int threads) {
  std::vector<double> x(size_t(routing.tokens) * p.hidden);
  for (size_t i = 0; i < x.size(); ++i) x[i] = mx::e4m3_value(x_q[i]) * mx::ue8m0_value(x_scales[i / 32]);
  return layer_reference(p, w, x, Intermediate::mxfp8, routing, threads);
}

QuantizedReference quantized_reference_flips(const MoeProblem& p, const CheckpointWeights& w,
                                             const std::vector<std::uint8_t>& x_q,
                                             const std::vector<std::uint8_t>& x_scales, const Routing& routing,
                                             int threads, double twin_jitter, std::uint64_t twin_seed) {
  std::vector<double> x(size_t(routing.tokens) * p.hidden);
  for (size_t i = 0; i < x.size(); ++i) x[i] = mx::e4m3_value(x_q[i]) * mx::ue8m0_value(x_scales[i / 32]);
  QuantizedReference out;
  layer_reference(p, w, x, Intermediate::mxfp8, routing, threads, FlipTrace{&out, twin_jitter, twin_seed});
  return out;
}

std::uint16_t finalize_element(const double* slot_sums, std::size_t stride, int slots) {
  float sum = 0;
  for (int j = 0; j < slots; ++j) sum += static_cast<float>(mx::round_bf16(slot_sums[j * stride]));
  return mx::bf16_bits(sum);
}

std::vector<std::uint16_t> quantized_reference_w4a16(const MoeProblem& p, const CheckpointWeights& w,
                                                     const std::vector<std::uint16_t>& x_bf16, const Routing& routing,
                                                     int threads) {
  std::vector<double> x(size_t(routing.tokens) * p.hidden);
  for (size_t i = 0; i < x.size(); ++i) x[i] = mx::bf16_value(x_bf16[i]);
  return layer_reference(p, w, x, Intermediate::bf16, routing, threads);
}

std::vector<double> dense_reference(const MoeProblem& problem, const CheckpointWeights& w, const std::vector<float>& x,
                                    const Routing& given, const std::vector<int>& tokens, int threads) {
  const Slots with_shared = with_shared_slot(problem, given);
  const MoeProblem& p = with_shared.p;
  const Routing& routing = with_shared.routing;
  const int K = p.top_k, H = p.hidden, I = p.intermediate;
  std::vector<double> y(tokens.size() * H, 0.0);
  parallel_for(static_cast<int>(tokens.size()), threads, [&](int ti) {
    const int t = tokens[ti];
    std::vector<double> act(I), row(std::max(H, I));
    for (int j = 0; j < K; ++j) {
      const int e = routing.ids[size_t(t) * K + j];
      if (e < 0 || e >= p.experts) continue;
      const std::vector<double> xt(x.begin() + size_t(t) * H, x.begin() + size_t(t + 1) * H);
      for (int i = 0; i < I; ++i) {
        double gu[2];
        for (int half = 0; half < 2; ++half) {
          const size_t r = w1_row(p, e, i, half);
          dequantize_row(w.w1.data() + r * (H / 2), w.s1.data() + r * (H / 32), H, row.data());
          gu[half] = dot(row.data(), xt.data(), H) + bias(w.b1, r);
        }
        const double g = std::min(gu[0], double(p.clamp));
        const double u = std::clamp(gu[1], -double(p.clamp), double(p.clamp));
        act[i] = gated(p, g, u);
      }
      for (int h = 0; h < H; ++h) {
        const size_t r = size_t(e) * H + h;
        dequantize_row(w.w2.data() + r * (I / 2), w.s2.data() + r * (I / 32), I, row.data());
        y[size_t(ti) * H + h] += routing.weights[size_t(t) * K + j] * (dot(row.data(), act.data(), I) + bias(w.b2, r));
      }
    }
  });
  return y;
}

std::vector<float> dequantize_mxfp4(const std::vector<std::uint8_t>& payload, const std::vector<std::uint8_t>& scales,
                                    std::size_t matrices, int rows, int cols) {
  std::vector<float> out(matrices * rows * cols);
  std::vector<double> row(cols);
  for (size_t r = 0; r < matrices * rows; ++r) {
    dequantize_row(payload.data() + r * (cols / 2), scales.data() + r * (cols / 32), cols, row.data());
    for (int c = 0; c < cols; ++c) out[r * cols + c] = static_cast<float>(row[c]);
  }
  return out;
}

Agreement compare(const std::vector<double>& got, const std::vector<double>& want) {
  Agreement a;
  double dot = 0, ng = 0, nw = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (!std::isfinite(got[i])) {
      ++a.nan_or_inf;
      continue;
    }
    dot += got[i] * want[i];
    ng += got[i] * got[i];
    nw += want[i] * want[i];
    a.max_abs_error = std::max(a.max_abs_error, std::fabs(got[i] - want[i]));
  }
  a.cosine = (ng == 0 && nw == 0) ? 1.0 : dot / std::sqrt(ng * nw);
  return a;
}

}  // namespace moejit::reference
