#include "oracle/moe_check.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <numeric>
#include <optional>
#include <random>
#include <thread>

#include "oracle/mx_format.hpp"

namespace moejit::oracle {

using runtime::DeviceBuffer;
using runtime::driver;

namespace {
// Fills `out` with random bytes from `seed`, split over threads (weights are GBs).
void random_bytes(std::vector<std::uint8_t>& out, std::uint64_t seed) {
  const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  const std::size_t chunk = (out.size() / threads + 7) / 8 * 8;
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      std::uint64_t s = seed ^ (0x9E3779B97F4A7C15ull * (t + 1));
      for (std::size_t i = t * chunk; i < std::min(out.size(), (t + 1) * chunk); ++i) {
        s += 0x9E3779B97F4A7C15ull;  // splitmix64
        std::uint64_t z = s;
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        out[i] = static_cast<std::uint8_t>(z ^ (z >> 31));
      }
    });
  for (auto& th : pool) th.join();
}

void random_scales(std::vector<std::uint8_t>& out, std::uint64_t seed, int lo, int hi) {
  random_bytes(out, seed);
  for (auto& s : out) s = static_cast<std::uint8_t>(lo + s % (hi - lo + 1));
}

DeviceBuffer upload(const std::vector<std::uint8_t>& v) {
  DeviceBuffer b(v.size());
  b.upload(v);
  return b;
}

std::vector<double> bf16_to_double(const std::vector<std::uint16_t>& v) {
  std::vector<double> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) out[i] = mx::bf16_value(v[i]);
  return out;
}
}  // namespace

reference::Agreement compare_bf16(const std::vector<std::uint16_t>& got, const std::vector<std::uint16_t>& want) {
  return reference::compare(bf16_to_double(got), bf16_to_double(want));
}

std::string_view routing_name(RoutingKind kind) {
  switch (kind) {
    case RoutingKind::uniform: return "uniform";
    case RoutingKind::one_expert: return "one-expert";
    case RoutingKind::zipf: return "zipf";
    case RoutingKind::sparse: return "sparse";
  }
  return "?";
}

reference::Routing random_routing(const reference::MoeProblem& p, int tokens, RoutingKind kind, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  const int E = p.experts, K = p.top_k;
  std::vector<double> popularity(E, 1.0);
  if (kind == RoutingKind::zipf)
    for (int e = 0; e < E; ++e) popularity[e] = 1.0 / std::pow(e + 1.0, 1.2);
  if (kind == RoutingKind::sparse)
    for (int e = std::min(E, 2 * K); e < E; ++e) popularity[e] = 0.0;
  std::vector<int> order(E);
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), rng);  // which experts are hot changes every run
  const int hot = static_cast<int>(rng() % E);

  reference::Routing r;
  r.tokens = tokens;
  r.ids.resize(std::size_t(tokens) * K);
  r.weights.resize(std::size_t(tokens) * K);
  std::uniform_real_distribution<float> uniform(0.05f, 1.0f);
  for (int t = 0; t < tokens; ++t) {
    std::vector<double> w = popularity;
    float total = 0;
    for (int j = 0; j < K; ++j) {
      int e;
      if (kind == RoutingKind::one_expert) {
        e = (hot + j) % E;
      } else {
        std::discrete_distribution<int> pick(w.begin(), w.end());
        const int rank = pick(rng);
        w[rank] = 0.0;  // distinct experts per token
        e = order[rank];
      }
      r.ids[std::size_t(t) * K + j] = e;
      total += r.weights[std::size_t(t) * K + j] = uniform(rng);
    }
    for (int j = 0; j < K; ++j) r.weights[std::size_t(t) * K + j] /= total;
  }
  return r;
}

RandomInputs random_inputs(const reference::MoeProblem& p, int tokens, RoutingKind kind, std::uint64_t seed,
                           const XStyle& style) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> octaves(0, 24);
  RandomInputs in;
  in.x.resize(std::size_t(tokens) * p.hidden);
  in.x_bf16.resize(in.x.size());
  for (std::size_t i = 0; i < in.x.size(); ++i) {
    int shift = style.wide ? -octaves(rng) : 0;
    if (!style.block_shift.empty()) shift += style.block_shift.at((i % p.hidden) / 32);
    in.x_bf16[i] = mx::bf16_bits(std::ldexp(normal(rng), shift));
    in.x[i] = static_cast<float>(mx::bf16_value(in.x_bf16[i]));
  }
  in.xq = mx::quantize_mxfp8(in.x, tokens, p.hidden);
  if (style.zero_block_code >= 0)
    for (int t = 0; t < tokens; ++t) {
      // +0 and -0 (a sign bit alone): the frame's shift of a zero block must keep both.
      for (int k = 0; k < 32; ++k) in.xq.elements[std::size_t(t) * p.hidden + k] = k % 2 ? 0x80 : 0x00;
      in.xq.scales[std::size_t(t) * (p.hidden / 32)] = static_cast<std::uint8_t>(style.zero_block_code);
      for (int k = 0; k < 32; ++k)
        in.x[std::size_t(t) * p.hidden + k] = 0.0f, in.x_bf16[std::size_t(t) * p.hidden + k] = 0;
    }
  in.routing = random_routing(p, tokens, kind, rng());
  return in;
}

RandomWeights random_weights(const reference::MoeProblem& p, std::uint64_t seed, const WeightScales& scales,
                             bool biases) {
  RandomWeights w;
  const std::size_t E = p.experts + (p.shared_expert ? 1 : 0), H = p.hidden, I = p.intermediate;
  w.host.w1.resize(E * 2 * I * H / 2);
  w.host.s1.resize(E * 2 * I * H / 32);
  w.host.w2.resize(E * H * I / 2);
  w.host.s2.resize(E * H * I / 32);
  random_bytes(w.host.w1, seed + 1);
  random_scales(w.host.s1, seed + 2, 118, 122);
  if (!scales.w1_block_code.empty())
    for (std::size_t i = 0; i < w.host.s1.size(); ++i)
      w.host.s1[i] = static_cast<std::uint8_t>(scales.w1_block_code.at(i % (H / 32)));
  random_bytes(w.host.w2, seed + 3);
  random_scales(w.host.s2, seed + 4, scales.w2_lo, scales.w2_hi);
  w.w1 = upload(w.host.w1);
  w.s1 = upload(w.host.s1);
  w.w2 = upload(w.host.w2);
  w.s2 = upload(w.host.s2);
  if (biases) {
    std::mt19937_64 rng(seed + 5);
    std::uniform_real_distribution<double> magnitude(-8.0, 0.0);  // log2 |b|
    auto fill = [&](std::vector<std::uint16_t>& b, std::size_t n) {
      b.resize(n);
      for (auto& v : b) v = mx::bf16_bits((rng() & 1 ? -1.0 : 1.0) * std::exp2(magnitude(rng)));
    };
    fill(w.host.b1, E * 2 * I);
    fill(w.host.b2, E * H);
    w.b1 = DeviceBuffer(w.host.b1.size() * 2);
    w.b1.upload(w.host.b1);
    w.b2 = DeviceBuffer(w.host.b2.size() * 2);
    w.b2.upload(w.host.b2);
  }
  return w;
}

bool MoeCheckResult::passed() const {
  return quantized.cosine >= cosine_bar && quantized.nan_or_inf == 0 && dense.cosine >= dense_bar && unwritten == 0 &&
         rerun_identical && x_quantization_matches && epoch == 2;
}

std::string MoeCheckResult::summary() const {
  return fmt::format(
      "{:<5} B={:<3} {:<10} cos_q={:.7f} maxerr_q={:.3g}{} cos_dense={:.5f} nan={} unwritten={} rerun={} epoch={} "
      "{}{:.3f} ms (check {:.1f} s) {}",
      path, tokens, routing_name(routing), quantized.cosine, quantized.max_abs_error,
      flips_found < 0 ? std::string()
                      : fmt::format(" flips={}/{} (plain cos_q={:.7f})", flips_taken, flips_found, plain_cosine),
      dense.cosine, quantized.nan_or_inf, unwritten, rerun_identical ? "same" : "DIFFERENT", epoch,
      // The dispatch role's rows against their CPU twin: which role a failure starts in.
      x_quantization_matches ? "" : "x_rows=DIFFERENT ", gpu_ms, wall_seconds, passed() ? "PASS" : "FAIL");
}

std::vector<MoeCheckResult> check_forward(const std::vector<runtime::MoeLayer*>& layers, const RandomWeights& weights,
                                          int tokens, RoutingKind routing, std::uint64_t seed, const XStyle& style) {
  const auto wall_start = std::chrono::steady_clock::now();
  const reference::MoeProblem p = problem_of(layers.front()->config());
  const int H = p.hidden;

  const RandomInputs in = random_inputs(p, tokens, routing, seed, style);
  const std::vector<float>& x = in.x;
  const std::vector<std::uint16_t>& x_bf16 = in.x_bf16;
  const mx::MxMatrix& xq = in.xq;
  const reference::Routing& r = in.routing;

  DeviceBuffer d_xq(xq.elements.size()), d_xs(xq.scales.size()), d_xb(x_bf16.size() * 2);
  DeviceBuffer d_ids(r.ids.size() * 4), d_w(r.weights.size() * 4), d_y(std::size_t(tokens) * H * 2);
  d_xq.upload(xq.elements);
  d_xs.upload(xq.scales);
  d_xb.upload(x_bf16);
  d_ids.upload(r.ids);
  d_w.upload(r.weights);
  runtime::MoeForwardArgs args{d_xq.ptr(), d_xs.ptr(), d_xb.ptr(), d_ids.ptr(), d_w.ptr(), d_y.ptr(), tokens};

  std::vector<MoeCheckResult> results;
  std::vector<std::vector<std::uint16_t>> outputs;
  for (runtime::MoeLayer* layer : layers) {
    MoeCheckResult res;
    res.tokens = tokens;
    res.routing = routing;
    res.path = std::string(codegen::path_name(*layer->options().codegen.path));
    CUstream stream = nullptr;
    MOEJIT_CU(cuStreamCreate, &stream, CU_STREAM_NON_BLOCKING);
    CUevent start = nullptr, stop = nullptr;
    MOEJIT_CU(cuEventCreate, &start, CU_EVENT_DEFAULT);
    MOEJIT_CU(cuEventCreate, &stop, CU_EVENT_DEFAULT);
    std::vector<std::uint16_t> y[2];
    for (int run = 0; run < 2; ++run) {
      MOEJIT_CU(cuMemsetD8Async, d_y.ptr(), 0xFF, d_y.bytes(), stream);  // poison: 0xFFFF is never written
      MOEJIT_CU(cuEventRecord, start, stream);
      layer->forward(args, stream);
      MOEJIT_CU(cuEventRecord, stop, stream);
      MOEJIT_CU(cuStreamSynchronize, stream);
      float ms = 0;
      MOEJIT_CU(cuEventElapsedTime, &ms, start, stop);
      res.gpu_ms = ms;
      y[run].resize(std::size_t(tokens) * H);
      d_y.download(y[run]);
    }
    res.rerun_identical = y[0] == y[1];
    res.unwritten = static_cast<std::size_t>(std::count(y[0].begin(), y[0].end(), std::uint16_t{0xFFFF}));

    // The kernel's own quantization of BF16 x must equal the CPU twin's, bit for bit.
    const contract::WorkspaceLayout l = layer->workspace_layout();
    const CUdeviceptr ws = layer->workspace(stream);
    // Split rows (the fast path) must hold each code in exactly the row its magnitude names, with or without
    // BF16 input, and rebuild x.
    const bool split = contract::path_split_rows(layer->atom().contract_path);
    // The rows are padded to the kernels' H (zeros past the model's).
    const bool quantizes = layer->options().codegen.input_bf16 && layer->config().recipe == codegen::Recipe::w4a8_mx;
    if ((quantizes || split) && layer->plan(tokens).dispatch.launched) {
      const int hp = codegen::padded_hidden(layer->config());
      std::vector<std::uint8_t> gq(std::size_t(tokens) * hp), gs(gq.size() / 32), small(split ? gq.size() : 0);
      MOEJIT_CU(cuMemcpyDtoH, gq.data(), ws + l.x_q, gq.size());
      MOEJIT_CU(cuMemcpyDtoH, gs.data(), ws + l.x_scales, gs.size());
      if (split) MOEJIT_CU(cuMemcpyDtoH, small.data(), ws + l.x_small, small.size());
      // The token frame: every block of a row in the largest scale of its blocks that hold a nonzero element
      // (mx::e4m3_in_frame), every scale byte that one.
      const bool frame = layer->plan(tokens).token_frame;
      for (int t = 0; t < tokens; ++t) {
        const std::uint8_t* scales = xq.scales.data() + std::size_t(t) * (H / 32);
        const std::uint8_t* codes = xq.elements.data() + std::size_t(t) * H;
        std::vector<char> nonzero(frame ? H / 32 : 0);  // the row's blocks holding a nonzero element
        int top = 0;
        for (std::size_t kb = 0; kb < nonzero.size(); ++kb) {
          nonzero[kb] =
              std::any_of(codes + 32 * kb, codes + 32 * kb + 32, [](std::uint8_t c) { return (c & 0x7F) != 0; });
          if (nonzero[kb]) top = std::max(top, int(scales[kb]));
        }
        for (int k = 0; k < hp; ++k) {
          const std::size_t at = std::size_t(t) * hp + k;
          std::uint8_t code = k < H ? xq.elements[std::size_t(t) * H + k] : 0;
          if (frame && k < H && nonzero[k / 32]) code = mx::e4m3_in_frame(code, top - scales[k / 32]);
          if (k % 32 == 0) res.x_quantization_matches &= gs[at / 32] == (frame ? top : k < H ? scales[k / 32] : 0);
          if (!split) {
            res.x_quantization_matches &= gq[at] == code;
            continue;
          }
          const bool large = (code & 0x7F) >= contract::kSplitCode;
          res.x_quantization_matches &= gq[at] == (large ? code : 0) && small[at] == (large ? 0 : code);
        }
      }
    }
    // Two forwards ran on this workspace since it was created: the header epoch counts them.
    contract::MoeHeader header{};
    MOEJIT_CU(cuMemcpyDtoH, &header, ws + l.header, sizeof(header));
    res.epoch = header.epoch;
    layer->release_stream(stream);
    driver().cuEventDestroy(start);
    driver().cuEventDestroy(stop);
    driver().cuStreamDestroy(stream);
    results.push_back(res);
    outputs.push_back(std::move(y[0]));
  }

  // Every layer of one call shares a config, so one reference serves them all. A layer under the bar gets the
  // handoff flips resolved (moe_reference.hpp): the flagged reference costs about twice the plain one, and a layer
  // at the bar stays there resolved, so it is computed only when some layer needs it.
  const bool w4a16 = layers.front()->config().recipe == codegen::Recipe::w4a16;
  const std::vector<std::uint16_t> want =
      w4a16 ? reference::quantized_reference_w4a16(p, weights.host, x_bf16, r)
            : reference::quantized_reference(p, weights.host, xq.elements, xq.scales, r);
  std::optional<reference::QuantizedReference> flagged;
  const char* resolve_env = std::getenv("MOEJIT_RESOLVE_FLIPS");  // "1": every case, to count them
  const bool resolve_always = resolve_env && std::string_view(resolve_env) == "1";
  std::vector<int> sample;
  for (int t = 0; t < tokens && sample.size() < 16; t += std::max(1, tokens / 16)) sample.push_back(t);
  const std::vector<double> dense = reference::dense_reference(p, weights.host, x, r, sample);
  for (std::size_t i = 0; i < results.size(); ++i) {
    results[i].quantized = compare_bf16(outputs[i], want);
    if (!w4a16 && (resolve_always || !(results[i].quantized.cosine >= results[i].cosine_bar))) {
      results[i].plain_cosine = results[i].quantized.cosine;
      if (!flagged) flagged = reference::quantized_reference_flips(p, weights.host, xq.elements, xq.scales, r);
      const reference::FlipResolution resolved = reference::resolve_flips(*flagged, p, weights.host, outputs[i]);
      results[i].flips_found = static_cast<int>(flagged->flips.size());
      results[i].flips_taken = resolved.taken;
      results[i].quantized = compare_bf16(outputs[i], resolved.y);
    }
    std::vector<double> got_sample;
    for (int t : sample)
      for (int h = 0; h < H; ++h) got_sample.push_back(mx::bf16_value(outputs[i][std::size_t(t) * H + h]));
    results[i].dense = reference::compare(got_sample, dense);
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  for (MoeCheckResult& result : results) result.wall_seconds = seconds;
  return results;
}

}  // namespace moejit::oracle
