#pragma once
// What the benchmark programs share (METHOD.md): event timing, percentiles,
// the device copy bandwidth behind every HBM floor, and rotating input sets.
#include <cstdint>
#include <optional>
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
// The SM clock now, in MHz: the median over the CTAs of a launch of one CTA per SM (where the scheduler puts
// them) of %clock64 cycles over %globaltimer ns during a 200 us spin (the sm-probe kernel, built on first
// use). It falls under load (1665-1980 MHz on the H200s lent so far) and consumer-bound points move with
// it, so every bench prints it beside its times.
double sm_clock_mhz(CUstream stream);
// The value of option `flag`: "8" -> 8; anything but a whole integer throws std::invalid_argument naming both.
int parse_int(const std::string& flag, const std::string& text);
// "1,8,64" -> {1, 8, 64}.
std::vector<int> parse_int_list(const std::string& flag, const std::string& text);
std::vector<std::string> split_list(const std::string& text);  // "a,b,c" -> {"a", "b", "c"}
// A sweep of an on/off option: "planned,on,off" -> {unset, true, false}; anything else throws, naming the flag.
std::vector<std::optional<bool>> parse_switch_list(const std::string& flag, const std::string& text);

// Rows [first, first + rows) of a row-major host array of `per` elements a row, on the device (a rank's tokens
// of the global inputs); upload(v): all of it.
template <class T>
runtime::DeviceBuffer upload_rows(const std::vector<T>& v, std::size_t first, std::size_t rows, std::size_t per) {
  runtime::DeviceBuffer b(rows * per * sizeof(T));
  b.upload(v.data() + first * per, rows * per * sizeof(T));
  return b;
}
template <class T>
runtime::DeviceBuffer upload(const std::vector<T>& v) {
  return upload_rows(v, 0, v.size(), 1);
}

// One forward's inputs on the device (uniform routing), and how many experts it touches.
struct InputSet {
  runtime::DeviceBuffer xq, xs, xb, ids, w;  // x as MXFP8 (elements, scale words) and as BF16
  double touched = 0;
};
std::vector<InputSet> make_input_sets(const reference::MoeProblem& p, int tokens, int count, std::mt19937_64& rng);

// The bytes of one expert: W1 and W2 (payload + UE8M0 scales), and its BF16 biases if any.
double expert_bytes(const reference::MoeProblem& p, bool biases = false);

// A bench program's main around its body: an exception (a plan the device cannot run, an option out of range)
// ends it with one line, "<name>: error: <what>", and exit code 1; no CUDA driver is "<name>: skipped: ...",
// exit code 77 (as the GPU tests), instead of std::terminate.
int guarded_main(const char* name, int argc, char** argv, int (*body)(int, char**));

}  // namespace moejit::bench
