// moejit_bench_moe: latency of the fused MoE layer against the HBM floor.
//
// Method (METHOD.md): CUDA events around graph replays, after warm-up, median
// of many replays; each graph holds `kSets` forwards over different input
// sets (x, routing, route weights), so replays rotate through experts and the
// L2 does not serve the weights. The floor is the packed bytes (payload +
// scales) of the experts the routing touches, over the measured device copy
// bandwidth (read + write bytes). The per-role split comes from an eager run
// with events between the roles.
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "runtime/moe_check.hpp"
#include "runtime/moe_layer.hpp"
#include "runtime/mx_format.hpp"

using namespace moejit;

namespace {
constexpr int kSets = 4;
constexpr int kReplays = 30;

float elapsed(CUevent a, CUevent b) {
  float ms = 0;
  MOEJIT_CU(cuEventElapsedTime, &ms, a, b);
  return ms;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Device-to-device copy bandwidth, counting bytes read plus bytes written.
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
    if (i >= 2) runs.push_back(2.0 * bytes / (elapsed(s, e) * 1e-3) / 1e9);
  }
  return median(runs);
}

struct InputSet {
  runtime::DeviceBuffer xq, xs, ids, w;
  std::size_t touched = 0;
};

struct Model {
  const char* name;
  codegen::MoeConfig config;
};
}  // namespace

int main(int argc, char** argv) {
  std::vector<int> batches = {1, 2, 4, 8, 16, 32, 64, 128, 256};
  std::vector<Model> models = {{"glm5.2", codegen::builtin_model("glm5.2")},
                               {"dsv4.1-flash", codegen::builtin_model("dsv4.1-flash")}};
  // Tuning sweeps: --ctas-per-sm 2,3,4 (each value a layer; 0 = as planned), --models glm5.2
  std::vector<int> ctas_list = {0};
  std::string only_model;
  auto parse_list = [](const std::string& text) {
    std::vector<int> out;
    for (std::size_t at = 0; at < text.size();) {
      std::size_t comma = text.find(',', at);
      if (comma == std::string::npos) comma = text.size();
      out.push_back(std::stoi(text.substr(at, comma - at)));
      at = comma + 1;
    }
    return out;
  };
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--quick")
      batches = {1, 8, 64, 256};
    else if (a == "--batches" && i + 1 < argc)
      batches = parse_list(argv[++i]);
    else if (a == "--ctas-per-sm" && i + 1 < argc)
      ctas_list = parse_list(argv[++i]);
    else if (a == "--model" && i + 1 < argc)
      only_model = argv[++i];
    else {
      fmt::print(stderr,
                 "usage: moejit_bench_moe [--quick | --batches 1,8,...] [--model glm5.2|dsv4.1-flash] "
                 "[--ctas-per-sm 2,3,4]\n");
      return 2;
    }
  }

  runtime::ScopedContext ctx(0);
  const runtime::DeviceInfo dev = runtime::query_device(0);
  CUstream stream;
  MOEJIT_CU(cuStreamCreate, &stream, CU_STREAM_NON_BLOCKING);
  const double bw = copy_bandwidth_gbs(stream);
  fmt::print("device {} ({} SMs), copy bandwidth {:.0f} GB/s (read+write)\n", dev.name, dev.sm_count, bw);
  fmt::print("{:<13} {:>4} {:>7} {:>10} {:>10} {:>7} {:>9} {:>9} {:>9}  {}\n", "model", "B", "experts", "floor_us",
             "median_us", "%floor", "disp_us", "comp_us", "fin_us", "tile_n/stages xCTAs");

  std::mt19937_64 rng(std::random_device{}());
  for (const Model& m : models) {
    if (!only_model.empty() && only_model != m.name) continue;
    const reference::MoeProblem p = runtime::problem_of(m.config);
    const runtime::RandomWeights weights = runtime::random_weights(p, rng());
    for (int ctas : ctas_list) {
      runtime::MoeLayerOptions options;
      options.check_routes_on_host = false;  // graph capture: no host copies inside forward
      options.ctas_per_sm = ctas;
      runtime::MoeLayer layer(m.config, weights.device(), options);
      const double expert_bytes = double(2 * p.intermediate) * p.hidden * (0.5 + 1.0 / 32) +
                                  double(p.hidden) * p.intermediate * (0.5 + 1.0 / 32);
      runtime::DeviceBuffer y(std::size_t(256) * p.hidden * 2);
      for (int b : batches) {
        std::vector<InputSet> sets(kSets);
        double touched = 0;
        for (InputSet& s : sets) {
          const reference::Routing r = runtime::random_routing(p, b, runtime::RoutingKind::uniform, rng());
          std::vector<float> x(std::size_t(b) * p.hidden);
          std::normal_distribution<float> normal(0.0f, 1.0f);
          for (float& v : x) v = normal(rng);
          const mx::MxMatrix q = mx::quantize_mxfp8(x, b, p.hidden);
          const auto words = mx::pack_scale_words(q.scales, b, p.hidden);
          s.xq = runtime::DeviceBuffer(q.elements.size());
          s.xq.upload(q.elements);
          s.xs = runtime::DeviceBuffer(words.size() * 4);
          s.xs.upload(words);
          s.ids = runtime::DeviceBuffer(r.ids.size() * 4);
          s.ids.upload(r.ids);
          s.w = runtime::DeviceBuffer(r.weights.size() * 4);
          s.w.upload(r.weights);
          touched += double(std::set<int>(r.ids.begin(), r.ids.end()).size()) / kSets;
        }
        auto args = [&](InputSet& s) {
          return runtime::MoeForwardArgs{s.xq.ptr(), s.xs.ptr(), 0, s.ids.ptr(), s.w.ptr(), y.ptr(), b};
        };
        // Warm-up (and the one-time JIT for this batch size), then capture.
        for (int i = 0; i < 3; ++i)
          for (InputSet& s : sets) layer.forward(args(s), stream);
        MOEJIT_CU(cuStreamSynchronize, stream);
        CUgraph graph;
        CUgraphExec exec;
        MOEJIT_CU(cuStreamBeginCapture, stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
        for (InputSet& s : sets) layer.forward(args(s), stream);
        MOEJIT_CU(cuStreamEndCapture, stream, &graph);
        MOEJIT_CU(cuGraphInstantiateWithFlags, &exec, graph, 0);
        CUevent e0, e1;
        MOEJIT_CU(cuEventCreate, &e0, CU_EVENT_DEFAULT);
        MOEJIT_CU(cuEventCreate, &e1, CU_EVENT_DEFAULT);
        for (int i = 0; i < 3; ++i) MOEJIT_CU(cuGraphLaunch, exec, stream);
        std::vector<double> us;
        for (int i = 0; i < kReplays; ++i) {
          MOEJIT_CU(cuEventRecord, e0, stream);
          MOEJIT_CU(cuGraphLaunch, exec, stream);
          MOEJIT_CU(cuEventRecord, e1, stream);
          MOEJIT_CU(cuEventSynchronize, e1);
          us.push_back(elapsed(e0, e1) * 1e3 / kSets);
        }
        // Per-role split, eager.
        runtime::RoleEvents ev;
        for (CUevent* e : {&ev.start, &ev.dispatched, &ev.computed, &ev.finalized})
          MOEJIT_CU(cuEventCreate, e, CU_EVENT_DEFAULT);
        std::vector<double> d, c, f;
        for (int i = 0; i < 5; ++i)
          for (InputSet& s : sets) {
            layer.forward(args(s), stream, &ev);
            MOEJIT_CU(cuEventSynchronize, ev.finalized);
            d.push_back(elapsed(ev.start, ev.dispatched) * 1e3);
            c.push_back(elapsed(ev.dispatched, ev.computed) * 1e3);
            f.push_back(elapsed(ev.computed, ev.finalized) * 1e3);
          }
        const double floor_us = touched * expert_bytes / (bw * 1e9) * 1e6;
        const double med = median(us);
        const codegen::MoeKernelShape shape = layer.kernel_shape(b);
        fmt::print("{:<13} {:>4} {:>7.1f} {:>10.1f} {:>10.1f} {:>6.1f}% {:>9.1f} {:>9.1f} {:>9.1f}  {}/{} x{}\n",
                   m.name, b, touched, floor_us, med, 100.0 * floor_us / med, median(d), median(c), median(f),
                   shape.tile_n, shape.stages, shape.min_blocks_per_sm);
        std::fflush(stdout);
        MOEJIT_CU(cuGraphExecDestroy, exec);
        MOEJIT_CU(cuGraphDestroy, graph);
      }
    }
  }
  return 0;
}
