// moejit_bench_runtime: what the runtime costs around the kernels.
//
// 1. Host time per warm forward (p50, p99 over 2000 calls), eager (role graph
//    launch, or three direct launches) and while the stream is capturing
//    (attaching the cached child graph). Each call is timed alone; the stream
//    is drained every 50 calls outside the timed region.
// 2. GPU time per forward with programmatic dependent launch off and on:
//    replays of a captured graph of 4 forwards, eager role-graph launches and
//    direct launches, each the median of 30 windows of 4 forwards over rotating
//    input sets (METHOD.md), next to the HBM floor of the touched experts.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "bench_common.hpp"
#include "oracle/moe_check.hpp"
#include "runtime/moe_layer.hpp"

using namespace moejit;

namespace {
constexpr int kSets = 4;
constexpr int kWindows = 30;
using bench::elapsed_ms;
using bench::InputSet;
using bench::percentile;
using Clock = std::chrono::steady_clock;
}  // namespace

namespace {
int run(int argc, char** argv) {
  std::string model = "glm5.2";
  std::vector<int> batches = {1, 8, 64, 256};
  int host_batch = 8;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--model" && i + 1 < argc) {
      model = argv[++i];
    } else if (a == "--batches" && i + 1 < argc) {
      batches = bench::parse_int_list(a, argv[++i]);
    } else if (a == "--host-batch" && i + 1 < argc) {
      host_batch = bench::parse_int(a, argv[++i]);
    } else {
      const bool help = a == "--help" || a == "-h";  // asked for: stdout and 0; anything else is a usage error
      fmt::print(help ? stdout : stderr,
                 "usage: moejit_bench_runtime [--model glm5.2|dsv4.1-flash] [--batches 1,8,64,256] [--host-batch 8]\n"
                 "Host time per warm forward (eager, captured) and GPU time per forward with PDL off/on.\n");
      return help ? 0 : 2;
    }
  }
  const codegen::MoeConfig config = codegen::builtin_model(model);  // named before the device is touched
  for (int b : batches) codegen::validate_batch(config, b);
  codegen::validate_batch(config, host_batch);
  runtime::ScopedContext ctx(0);
  const runtime::DeviceInfo dev = runtime::query_device(0);
  const reference::MoeProblem p = oracle::problem_of(config);
  std::mt19937_64 rng(std::random_device{}());
  const oracle::RandomWeights weights = oracle::random_weights(p, rng());
  CUstream stream;
  MOEJIT_CU(cuStreamCreate, &stream, CU_STREAM_NON_BLOCKING);
  const double bw = bench::copy_bandwidth_gbs(stream);
  fmt::print("device {} ({} SMs), driver {}, copy bandwidth {:.0f} GB/s; model {}\n", dev.name, dev.sm_count,
             dev.driver_version, bw, model);

  runtime::MoeLayerOptions graph_pdl, graph_full, direct_pdl, direct_full;
  graph_pdl.pdl = direct_pdl.pdl = true;
  graph_full.pdl = direct_full.pdl = false;
  direct_pdl.use_graphs = direct_full.use_graphs = false;
  runtime::MoeLayer layer_pdl(config, weights.device(), graph_pdl);
  runtime::MoeLayer layer_full(config, weights.device(), graph_full);
  runtime::MoeLayer layer_direct_pdl(config, weights.device(), direct_pdl);
  runtime::MoeLayer layer_direct_full(config, weights.device(), direct_full);
  runtime::DeviceBuffer y(std::size_t(256) * p.hidden * 2);

  // ---- 1. host time per warm forward ----
  {
    const int b = host_batch;
    std::vector<InputSet> sets = bench::make_input_sets(p, b, kSets, rng);
    auto args = [&](InputSet& s) {
      return runtime::MoeForwardArgs{s.xq.ptr(), s.xs.ptr(), 0, s.ids.ptr(), s.w.ptr(), y.ptr(), b};
    };
    fmt::print("\nhost time per warm forward, B={} ({} calls each, every call timed alone)\n", b, 2000);
    fmt::print("{:<34} {:>8} {:>8}\n", "mode", "p50_us", "p99_us");
    auto eager = [&](runtime::MoeLayer& layer, const char* name) {
      for (InputSet& s : sets) layer.forward(args(s), stream);  // cold: plan, compile, graph
      MOEJIT_CU(cuStreamSynchronize, stream);
      std::vector<double> us;
      for (int i = 0; i < 2000; ++i) {
        const auto t0 = Clock::now();
        layer.forward(args(sets[i % kSets]), stream);
        us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
        if (i % 50 == 49) MOEJIT_CU(cuStreamSynchronize, stream);
      }
      MOEJIT_CU(cuStreamSynchronize, stream);
      fmt::print("{:<34} {:>8.2f} {:>8.2f}\n", name, percentile(us, 0.5), percentile(us, 0.99));
    };
    eager(layer_pdl, "eager, role graph, PDL");
    eager(layer_full, "eager, role graph, no PDL");
    eager(layer_direct_pdl, "eager, 3 direct launches, PDL");
    // Captured: the child graph of these arguments is cached; a forward attaches it.
    std::vector<double> us;
    for (int round = 0; round < 10; ++round) {
      MOEJIT_CU(cuStreamBeginCapture, stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
      for (int i = 0; i < 200; ++i) {
        const auto t0 = Clock::now();
        layer_pdl.forward(args(sets[i % kSets]), stream);
        us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
      }
      CUgraph g;
      MOEJIT_CU(cuStreamEndCapture, stream, &g);
      MOEJIT_CU(cuGraphDestroy, g);
    }
    fmt::print("{:<34} {:>8.2f} {:>8.2f}\n", "captured (child-graph attach), PDL", percentile(us, 0.5),
               percentile(us, 0.99));
    const auto c = layer_pdl.graph_counters();
    fmt::print("role graphs built {}, warm lookups {}\n", c.built, c.warm_hits);
  }

  // ---- 2. GPU time per forward ----
  const double expert_bytes = bench::expert_bytes(p);
  fmt::print("\nGPU time per forward (us): median of {} windows of {} forwards over rotating inputs\n", kWindows,
             kSets);
  fmt::print("{:>4} {:>9} {:>11} {:>11} {:>11} {:>11} {:>11} {:>11}  {}\n", "B", "floor_us", "replay", "replay+PDL",
             "eager", "eager+PDL", "direct", "direct+PDL", "%floor(replay+PDL)");
  CUevent e0, e1;
  MOEJIT_CU(cuEventCreate, &e0, CU_EVENT_DEFAULT);
  MOEJIT_CU(cuEventCreate, &e1, CU_EVENT_DEFAULT);
  for (int b : batches) {
    std::vector<InputSet> sets = bench::make_input_sets(p, b, kSets, rng);
    double touched = 0;
    for (const InputSet& s : sets) touched += s.touched / kSets;
    auto args = [&](InputSet& s) {
      return runtime::MoeForwardArgs{s.xq.ptr(), s.xs.ptr(), 0, s.ids.ptr(), s.w.ptr(), y.ptr(), b};
    };
    auto windows = [&](auto&& one_window) {
      for (int i = 0; i < 3; ++i) one_window();
      std::vector<double> us;
      for (int i = 0; i < kWindows; ++i) {
        MOEJIT_CU(cuEventRecord, e0, stream);
        one_window();
        MOEJIT_CU(cuEventRecord, e1, stream);
        MOEJIT_CU(cuEventSynchronize, e1);
        us.push_back(elapsed_ms(e0, e1) * 1e3 / kSets);
      }
      return percentile(us, 0.5);
    };
    auto replay = [&](runtime::MoeLayer& layer) {
      for (InputSet& s : sets) layer.forward(args(s), stream);
      MOEJIT_CU(cuStreamSynchronize, stream);
      CUgraph g;
      CUgraphExec exec;
      MOEJIT_CU(cuStreamBeginCapture, stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
      for (InputSet& s : sets) layer.forward(args(s), stream);
      MOEJIT_CU(cuStreamEndCapture, stream, &g);
      MOEJIT_CU(cuGraphInstantiateWithFlags, &exec, g, 0);
      const double t = windows([&] { MOEJIT_CU(cuGraphLaunch, exec, stream); });
      MOEJIT_CU(cuGraphExecDestroy, exec);
      MOEJIT_CU(cuGraphDestroy, g);
      return t;
    };
    auto eager = [&](runtime::MoeLayer& layer) {
      return windows([&] {
        for (InputSet& s : sets) layer.forward(args(s), stream);
      });
    };
    const double r_full = replay(layer_full), r_pdl = replay(layer_pdl);
    const double g_full = eager(layer_full), g_pdl = eager(layer_pdl);
    const double d_full = eager(layer_direct_full), d_pdl = eager(layer_direct_pdl);
    const double floor_us = touched * expert_bytes / (bw * 1e9) * 1e6;
    fmt::print("{:>4} {:>9.1f} {:>11.1f} {:>11.1f} {:>11.1f} {:>11.1f} {:>11.1f} {:>11.1f}  {:.1f}%\n", b, floor_us,
               r_full, r_pdl, g_full, g_pdl, d_full, d_pdl, 100.0 * floor_us / r_pdl);
    std::fflush(stdout);
  }
  for (runtime::MoeLayer* l : {&layer_pdl, &layer_full, &layer_direct_pdl, &layer_direct_full})
    l->release_stream(stream);
  return 0;
}
}  // namespace

int main(int argc, char** argv) {
  return bench::guarded_main("moejit_bench_runtime", argc, argv, run);
}
