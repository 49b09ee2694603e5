#pragma once
// What the benchmark programs share (METHOD.md): event timing, percentiles,
// the device copy bandwidth behind every HBM floor, and rotating input sets.
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "oracle/moe_reference.hpp"
#include "runtime/device.hpp"

namespace moejit::bench {

float elapsed_ms(CUevent a, CUevent b);
// The q-quantile (0.5: the median) of `v`.
double percentile(std::vector<double> v, double q);
// Device-to-device copy bandwidth, counting bytes read plus bytes written
// (median of 10 copies of 2 GiB after 2 warm-ups).
double copy_bandwidth_gbs(CUstream stream);
// "1,8,64" -> {1, 8, 64}.
std::vector<int> parse_int_list(const std::string& text);

// One forward's inputs on the device (uniform routing), and how many experts it touches.
struct InputSet {
  runtime::DeviceBuffer xq, xs, xb, ids, w;  // x as MXFP8 (elements, scale words) and as BF16
  double touched = 0;
};
std::vector<InputSet> make_input_sets(const reference::MoeProblem& p, int tokens, int count, std::mt19937_64& rng);

// The bytes of one expert: W1 and W2 (payload + UE8M0 scales), and its BF16 biases if any.
double expert_bytes(const reference::MoeProblem& p, bool biases = false);

}  // namespace moejit::bench
