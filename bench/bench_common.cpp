#include "bench_common.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <exception>
#include <set>
#include <stdexcept>

#include "codegen/sm_probe_kernel.hpp"
#include "jit/kernel_builder.hpp"
#include "oracle/moe_check.hpp"
#include "runtime/loaded_kernel.hpp"

namespace moejit::bench {

float elapsed_ms(CUevent a, CUevent b) {
  float ms = 0;
  MOEJIT_CU(cuEventElapsedTime, &ms, a, b);
  return ms;
}

double percentile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(q * v.size()))];
}

double copy_bandwidth_gbs(CUstream stream) {
  const std::size_t bytes = std::size_t(2) << 30;
  runtime::DeviceBuffer a(bytes), b(bytes);
  MOEJIT_CU(cuMemsetD8Async, a.ptr(), 1, bytes, stream);
  CUevent s, e;
  MOEJIT_CU(cuEventCreate, &s, CU_EVENT_DEFAULT);
  MOEJIT_CU(cuEventCreate, &e, CU_EVENT_DEFAULT);
  std::vector<double> runs;
  for (int i = 0; i < 12; ++i) {
    MOEJIT_CU(cuEventRecord, s, stream);
    MOEJIT_CU(cuMemcpyDtoDAsync, b.ptr(), a.ptr(), bytes, stream);
    MOEJIT_CU(cuEventRecord, e, stream);
    MOEJIT_CU(cuEventSynchronize, e);
    if (i >= 2) runs.push_back(2.0 * bytes / (elapsed_ms(s, e) * 1e-3) / 1e9);
  }
  runtime::driver().cuEventDestroy(s);
  runtime::driver().cuEventDestroy(e);
  return percentile(runs, 0.5);
}

double sm_clock_mhz(CUstream stream) {
  static const runtime::DeviceInfo dev = runtime::query_device(0);
  static const jit::BuildArtifacts built = [] {
    const auto target = codegen::parse_target(dev.target_name());
    if (!target) throw std::runtime_error(fmt::format("sm clock: no target for {}", dev.target_name()));
    return jit::build_kernel(codegen::sm_probe_spec(*target));
  }();
  static const runtime::LoadedKernel kernel(built.cubin, built.spec.entry_name());
  const int grid = dev.sm_count;
  runtime::DeviceBuffer sms(sizeof(std::uint32_t) * grid), clock(2 * sizeof(std::uint32_t) * grid);
  CUdeviceptr out = sms.ptr(), clock_out = clock.ptr();
  std::uint32_t spin_ns = 200000;
  void* args[] = {&out, &spin_ns, &clock_out};
  kernel.launch(runtime::LaunchDims{static_cast<unsigned>(grid), 32, 0}, stream, args);
  std::vector<std::uint32_t> raw(2 * grid);
  MOEJIT_CU(cuStreamSynchronize, stream);
  MOEJIT_CU(cuMemcpyDtoH, raw.data(), clock.ptr(), raw.size() * sizeof(std::uint32_t));
  std::vector<double> mhz;
  for (int b = 0; b < grid; ++b)
    if (raw[2 * b + 1] > 0) mhz.push_back(1e3 * raw[2 * b] / raw[2 * b + 1]);
  return mhz.empty() ? 0.0 : percentile(mhz, 0.5);
}

int parse_int(const std::string& flag, const std::string& text) {
  std::size_t used = 0;
  int v = 0;
  try {
    v = std::stoi(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size())
    throw std::invalid_argument(fmt::format("{}: '{}' is not an integer", flag, text));
  return v;
}

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  for (std::size_t at = 0; at <= text.size();) {
    std::size_t comma = text.find(',', at);
    if (comma == std::string::npos) comma = text.size();
    out.push_back(text.substr(at, comma - at));
    at = comma + 1;
  }
  return out;
}

std::vector<int> parse_int_list(const std::string& flag, const std::string& text) {
  std::vector<int> out;
  for (const std::string& item : split_list(text)) out.push_back(parse_int(flag, item));
  return out;
}

std::vector<std::optional<bool>> parse_switch_list(const std::string& flag, const std::string& text) {
  std::vector<std::optional<bool>> out;
  for (const std::string& name : split_list(text)) {
    if (name != "planned" && name != "on" && name != "off")
      throw std::invalid_argument(fmt::format("{}: '{}' is not one of planned, on, off", flag, name));
    out.push_back(name == "planned" ? std::nullopt : std::optional<bool>(name == "on"));
  }
  return out;
}

std::vector<InputSet> make_input_sets(const reference::MoeProblem& p, int tokens, int count, std::mt19937_64& rng) {
  std::vector<InputSet> sets(count);
  for (InputSet& s : sets) {
    const oracle::RandomInputs in = oracle::random_inputs(p, tokens, oracle::RoutingKind::uniform, rng());
    s.xq = runtime::DeviceBuffer(in.xq.elements.size());
    s.xq.upload(in.xq.elements);
    s.xs = runtime::DeviceBuffer(in.xq.scales.size());
    s.xs.upload(in.xq.scales);
    s.xb = runtime::DeviceBuffer(in.x_bf16.size() * 2);
    s.xb.upload(in.x_bf16);
    s.ids = runtime::DeviceBuffer(in.routing.ids.size() * 4);
    s.ids.upload(in.routing.ids);
    s.w = runtime::DeviceBuffer(in.routing.weights.size() * 4);
    s.w.upload(in.routing.weights);
    s.touched = double(std::set<int>(in.routing.ids.begin(), in.routing.ids.end()).size());
  }
  return sets;
}

double expert_bytes(const reference::MoeProblem& p, bool biases) {
  return double(2 * p.intermediate) * p.hidden * (0.5 + 1.0 / 32) +
         double(p.hidden) * p.intermediate * (0.5 + 1.0 / 32) + (biases ? 2.0 * (2 * p.intermediate + p.hidden) : 0.0);
}

int guarded_main(const char* name, int argc, char** argv, int (*body)(int, char**)) {
  try {
    return body(argc, argv);
  } catch (const runtime::NoDriverError& e) {
    fmt::print(stderr, "{}: skipped: {}\n", name, e.what());
    return 77;
  } catch (const std::exception& e) {
    fmt::print(stderr, "{}: error: {}\n", name, e.what());
    return 1;
  }
}

}  // namespace moejit::bench
