#pragma once
// What the GPU tests share: the run's seed, small layer configurations, and
// one forward's inputs and output on the device.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "codegen/moe_config.hpp"
#include "oracle/moe_check.hpp"
#include "oracle/moe_reference.hpp"
#include "oracle/mx_format.hpp"
#include "runtime/device.hpp"
#include "runtime/driver_api.hpp"
#include "runtime/moe_layer.hpp"

namespace moejit::gpu_test {

// One seed per process, printed when first drawn (every process of a sharded
// run prints its own); MOEJIT_TEST_SEED repeats a run.
inline std::uint64_t seed() {
  static const std::uint64_t s = [] {
    const char* env = std::getenv("MOEJIT_TEST_SEED");
    const std::uint64_t drawn = env ? std::strtoull(env, nullptr, 10) : std::uint64_t{std::random_device{}()};
    std::printf("MOEJIT_TEST_SEED=%llu (set it to repeat this process's inputs)\n",
                static_cast<unsigned long long>(drawn));
    std::fflush(stdout);
    return drawn;
  }();
  return s;
}

inline codegen::MoeConfig small_config(const char* name, int experts, int top_k, int hidden, int intermediate) {
  codegen::MoeConfig c;
  c.name = name;
  c.experts = experts;
  c.top_k = top_k;
  c.hidden = hidden;
  c.intermediate = intermediate;
  return c;
}

// Device buffers that hold one forward's inputs and output at a fixed address.
struct DeviceInputs {
  std::size_t tokens, hidden, top_k;
  runtime::DeviceBuffer xq, xs, ids, w, y;
  DeviceInputs(const reference::MoeProblem& p, int tokens)
      : tokens(tokens),
        hidden(p.hidden),
        top_k(p.top_k),
        xq(std::size_t(tokens) * p.hidden),
        xs(std::size_t(tokens) * p.hidden / 32),
        ids(std::size_t(tokens) * p.top_k * 4),
        w(std::size_t(tokens) * p.top_k * 4),
        y(std::size_t(tokens) * p.hidden * 2) {}
  // `tokens` of `in`'s tokens from `first` (an expert-parallel rank's slice of the global inputs).
  void upload(const oracle::RandomInputs& in, CUstream s, std::size_t first = 0) {
    MOEJIT_CU(cuMemcpyHtoDAsync, xq.ptr(), in.xq.elements.data() + first * hidden, tokens * hidden, s);
    MOEJIT_CU(cuMemcpyHtoDAsync, xs.ptr(), in.xq.scales.data() + first * hidden / 32, tokens * hidden / 32, s);
    MOEJIT_CU(cuMemcpyHtoDAsync, ids.ptr(), in.routing.ids.data() + first * top_k, tokens * top_k * 4, s);
    MOEJIT_CU(cuMemcpyHtoDAsync, w.ptr(), in.routing.weights.data() + first * top_k, tokens * top_k * 4, s);
  }
  runtime::MoeForwardArgs args(int b, CUdeviceptr workspace = 0) const {
    runtime::MoeForwardArgs a{xq.ptr(), xs.ptr(), 0, ids.ptr(), w.ptr(), y.ptr(), b};
    a.workspace = workspace;
    return a;
  }
};

inline std::vector<std::uint16_t> download_sync(const runtime::DeviceBuffer& b, CUstream s) {
  std::vector<std::uint16_t> v(b.bytes() / 2);
  MOEJIT_CU(cuStreamSynchronize, s);
  b.download(v);
  return v;
}

// NaN, Inf, or the 0xFFFF poison.
inline std::size_t bad_elements(const std::vector<std::uint16_t>& y) {
  std::size_t bad = 0;
  for (std::uint16_t v : y) bad += (v & 0x7F80u) == 0x7F80u;
  return bad;
}

// Where two outputs [tokens][hidden] differ, for a failed bitwise comparison: how many elements, over how many
// tokens, the first one, and the largest difference (a few elements one BF16 step apart is a summation order;
// whole rows, a stale or unwritten read).
inline std::string describe_difference(const std::vector<std::uint16_t>& want, const std::vector<std::uint16_t>& got,
                                       std::size_t hidden) {
  std::size_t differ = 0, nonfinite = 0, tokens = 0, first = SIZE_MAX, last_token = SIZE_MAX;
  double largest = 0;
  for (std::size_t i = 0; i < std::min(want.size(), got.size()); ++i) {
    if (want[i] == got[i]) continue;
    ++differ;
    if (i / hidden != last_token) ++tokens, last_token = i / hidden;
    if (first == SIZE_MAX) first = i;
    const double d = std::abs(mx::bf16_value(want[i]) - mx::bf16_value(got[i]));
    if (std::isfinite(d))
      largest = std::max(largest, d);
    else
      ++nonfinite;  // NaN, Inf or the 0xFFFF poison on one side
  }
  const std::string sizes =
      want.size() == got.size() ? "" : fmt::format("; sizes differ: {} vs {}", want.size(), got.size());
  if (differ == 0) return (sizes.empty() ? "identical" : "the shared elements agree") + sizes;
  return fmt::format(
      "{} of {} elements differ, in {} tokens, {} of them NaN, Inf or unwritten on one side; first at "
      "token {} column {}: 0x{:04x} vs 0x{:04x} ({} vs {}); largest finite difference {}{}",
      differ, std::min(want.size(), got.size()), tokens, nonfinite, first / hidden, first % hidden, want[first],
      got[first], mx::bf16_value(want[first]), mx::bf16_value(got[first]), largest, sizes);
}

// y against the quantized CPU reference of the same inputs (handoff flips resolved to the kernel's side).
inline double cosine_vs_reference(const oracle::RandomWeights& w, const reference::MoeProblem& p,
                                  const oracle::RandomInputs& in, const std::vector<std::uint16_t>& y) {
  return oracle::compare_bf16(y,
                              reference::resolved_reference(p, w.host, in.xq.elements, in.xq.scales, in.routing, y).y)
      .cosine;
}

}  // namespace moejit::gpu_test
