// moejit_bench_moe: latency of the fused MoE layer against the HBM floor.
//
// Method (METHOD.md): CUDA events around graph replays, after warm-up, median
// of many replays; each graph holds `kSets` forwards over different input
// sets (x, routing, route weights), so replays rotate through experts and the
// L2 does not serve the weights. The floor is the packed bytes (payload +
// scales, and biases) of the experts the routing touches, plus the fused
// shared expert's (--shared-expert: every token reaches it), over the measured device copy
// bandwidth (read + write bytes). The per-role split comes from an eager run
// with events between the roles. sm_MHz is the SM clock measured right after
// the replays: the consumer-bound points scale with it, and leases differ. --trace adds, per B, where the compute
// role's time goes: each milestone of contract::TraceSlot over the CTAs;
// --trace-csv DIR also writes every CTA's milestones, a CSV per B. The command
// line and its checks: moe_bench_options.cpp.
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "bench_common.hpp"
#include "moe_bench_options.hpp"
#include "moe_trace.hpp"
#include "oracle/moe_check.hpp"
#include "runtime/moe_layer.hpp"
#include "templates/moe_contract.cuh"

using namespace moejit;
using bench::InputSet;
using bench::MoeBenchModel;
using bench::MoeBenchOptions;

namespace {
constexpr int kSets = 4;
constexpr int kReplays = 30;
using bench::elapsed_ms;

double median(const std::vector<double>& v) {
  return bench::percentile(v, 0.5);
}

// The median over replays of a graph that `capture` records, per forward (each replay runs kSets of them).
template <class Capture>
double graph_replays_us(CUstream stream, Capture&& capture) {
  CUgraph graph;
  CUgraphExec exec;
  MOEJIT_CU(cuStreamBeginCapture, stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
  capture();
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
    us.push_back(elapsed_ms(e0, e1) * 1e3 / kSets);
  }
  MOEJIT_CU(cuEventDestroy, e0);
  MOEJIT_CU(cuEventDestroy, e1);
  MOEJIT_CU(cuGraphExecDestroy, exec);
  MOEJIT_CU(cuGraphDestroy, graph);
  return median(us);
}

// One B of one layer: its input sets and what a forward over set s is.
struct Point {
  runtime::MoeLayer& layer;
  std::vector<InputSet> sets;
  CUdeviceptr y;
  int b;
  CUstream stream;
  runtime::MoeForwardArgs args(const InputSet& s) const {
    return runtime::MoeForwardArgs{s.xq.ptr(), s.xs.ptr(), s.xb.ptr(), s.ids.ptr(), s.w.ptr(), y, b};
  }
  void forward_all() {
    for (const InputSet& s : sets) layer.forward(args(s), stream);
  }
};

// Each role's time in eager forwards, with events between the roles: medians in us.
struct RoleSplit {
  double dispatch, compute, finalize;
};
RoleSplit eager_role_split(Point& pt) {
  runtime::RoleEvents ev;
  for (CUevent* e : {&ev.start, &ev.dispatched, &ev.computed, &ev.finalized})
    MOEJIT_CU(cuEventCreate, e, CU_EVENT_DEFAULT);
  std::vector<double> d, c, f;
  for (int i = 0; i < 5; ++i)
    for (const InputSet& s : pt.sets) {
      pt.layer.forward(pt.args(s), pt.stream, &ev);
      MOEJIT_CU(cuEventSynchronize, ev.finalized);
      d.push_back(elapsed_ms(ev.start, ev.dispatched) * 1e3);
      c.push_back(elapsed_ms(ev.dispatched, ev.computed) * 1e3);
      f.push_back(elapsed_ms(ev.computed, ev.finalized) * 1e3);
    }
  for (CUevent e : {ev.start, ev.dispatched, ev.computed, ev.finalized}) MOEJIT_CU(cuEventDestroy, e);
  return {median(d), median(c), median(f)};
}

// --leave-out: the same forwards launched role by role (programmatic edges as planned) into one capture, whole
// and less each role: the differences are the roles' shares, overlap included.
void print_leave_out(Point& pt, const codegen::MoeLaunchPlan& plan, const std::vector<std::string>& leave_out) {
  auto launched_us = [&](const std::string& left_out) {
    return graph_replays_us(pt.stream, [&] {
      for (const InputSet& s : pt.sets) {
        std::vector<runtime::RoleLaunch> roles = pt.layer.launches(pt.args(s), pt.stream);
        std::erase_if(roles, [&](const runtime::RoleLaunch& r) { return r.role == left_out; });
        runtime::launch_roles(roles, pt.stream, plan.pdl);
      }
    });
  };
  const double whole = launched_us("");
  fmt::print("  role by role, whole  {:>30.1f} us\n", whole);
  for (const std::string& role : leave_out) {
    if (role == "finalize" && plan.schedule == codegen::Schedule::units) {
      // Its finalize grid ends the forward: without it the readiness counters stay set, and the next
      // forward's GEMM2 would not wait for its inputs.
      fmt::print("  without finalize: not run (the unit schedule's finalize grid ends the forward)\n");
      continue;
    }
    const double without = launched_us(role);
    fmt::print("  without {:<9} {:>33.1f} us, {:.1f} us less\n", role, without, whole - without);
  }
}

// --trace: the last of a rotation over the sets (so the weights come from HBM), each forward traced.
bench::TraceValues traced_forwards(Point& pt, const codegen::MoeLaunchPlan& plan) {
  const std::size_t slots = std::size_t(plan.compute.grid) * contract::kTraceSlots;
  runtime::DeviceBuffer buffer(slots * 8);
  for (const InputSet& s : pt.sets) {
    // Zeroed before each forward: the split-K wait slot accumulates (contract::TraceSlot).
    MOEJIT_CU(cuMemsetD8Async, buffer.ptr(), 0, slots * 8, pt.stream);
    runtime::MoeForwardArgs traced = pt.args(s);
    traced.trace = buffer.ptr();
    pt.layer.forward(traced, pt.stream);
  }
  std::vector<std::uint64_t> t(slots);
  MOEJIT_CU(cuStreamSynchronize, pt.stream);
  MOEJIT_CU(cuMemcpyDtoH, t.data(), buffer.ptr(), slots * 8);
  return bench::TraceValues(std::move(t), plan.compute.grid);
}

// One row: the layer at B = pt.b against the floor of the experts its input sets touch.
void bench_point(const MoeBenchOptions& o, const MoeBenchModel& m, Point& pt, double expert_bytes, double bw) {
  double touched = 0;
  for (const InputSet& s : pt.sets) touched += s.touched / kSets;
  if (m.config.shared_expert) touched += 1;  // every token reaches it
  // Warm-up (and the one-time JIT for this batch size), then capture.
  for (int i = 0; i < 3; ++i) pt.forward_all();
  MOEJIT_CU(cuStreamSynchronize, pt.stream);
  const double med = graph_replays_us(pt.stream, [&] { pt.forward_all(); });
  const double mhz = bench::sm_clock_mhz(pt.stream);  // right after the replays: the clock they ran at
  const RoleSplit split = eager_role_split(pt);
  const double floor_us = touched * expert_bytes / (bw * 1e9) * 1e6;
  const codegen::MoeLaunchPlan plan = pt.layer.plan(pt.b);
  fmt::print(
      "{:<19} {:>4} {:>7.1f} {:>10.1f} {:>10.1f} {:>6.1f}% {:>9.1f} {:>9.1f} {:>9.1f} {:>7.0f}  {}/{} x{} g{} a{} "
      "{} {} {} {} {}\n",
      m.name, pt.b, touched, floor_us, med, 100.0 * floor_us / med, split.dispatch, split.compute, split.finalize, mhz,
      plan.tile_n, plan.stages, plan.compute.blocks_per_sm, plan.groups, plan.activation_warps,
      codegen::schedule_name(plan.schedule), plan.pdl ? "pdl" : "-", plan.paired_rows ? "paired" : "-",
      plan.token_frame ? "frame" : "-", plan.warp_tables ? "warp" : "block");
  if (!o.leave_out.empty()) print_leave_out(pt, plan, o.leave_out);
  if (o.trace) {
    const bench::TraceValues values = traced_forwards(pt, plan);
    bench::print_trace(values);
    if (!o.trace_dir.empty()) bench::write_trace_csv(values, o.trace_dir / bench::trace_csv_name(m.name, pt.b, plan));
  }
  std::fflush(stdout);
}

int run(int argc, char** argv) {
  MoeBenchOptions o;
  if (const std::optional<int> done = bench::parse_moe_bench_options(argc, argv, o)) return *done;
  runtime::ScopedContext ctx(0);
  const runtime::DeviceInfo dev = runtime::query_device(0);
  if (o.sm_count > dev.sm_count)  // before the copy-bandwidth measurement and any layer
    throw std::invalid_argument(fmt::format("--sm-count: {} is outside the allowed range [0, {}] (the {}'s SMs)",
                                            o.sm_count, dev.sm_count, dev.name));
  CUstream stream;
  MOEJIT_CU(cuStreamCreate, &stream, CU_STREAM_NON_BLOCKING);
  const double bw = bench::copy_bandwidth_gbs(stream);
  fmt::print(
      "device {} ({} SMs{}), copy bandwidth {:.0f} GB/s (read+write), SM clock {:.0f} MHz, path {}, recipe {}{}\n",
      dev.name, dev.sm_count, o.sm_count ? fmt::format(", the layers planned and launched on {}", o.sm_count) : "", bw,
      bench::sm_clock_mhz(stream),
      codegen::path_name(codegen::resolve_path(o.codegen.path, codegen::Arch::sm_90a, o.recipe)),
      codegen::recipe_name(o.recipe), o.codegen.input_bf16 ? ", BF16 x" : "");
  fmt::print("{:<19} {:>4} {:>7} {:>10} {:>10} {:>7} {:>9} {:>9} {:>9} {:>7}  {}\n", "model", "B", "experts",
             "floor_us", "median_us", "%floor", "disp_us", "comp_us", "fin_us", "sm_MHz",
             "tile_n/stages xCTAs groups act-warps schedule pdl paired frame tables");
  std::mt19937_64 rng(std::random_device{}());
  const int max_b = *std::max_element(o.batches.begin(), o.batches.end());
  for (const MoeBenchModel& m : o.models) {
    const reference::MoeProblem p = oracle::problem_of(m.config);
    const oracle::RandomWeights weights = oracle::random_weights(p, rng(), {}, m.config.biases);
    for (const bench::MoeBenchVariant& v : o.variants) {
      runtime::MoeLayer layer(m.config, weights.device(), o.layer_options(v));
      const double expert_bytes = bench::expert_bytes(p, m.config.biases);
      runtime::DeviceBuffer y(std::size_t(max_b) * p.hidden * 2);
      for (int b : o.batches) {
        Point pt{layer, bench::make_input_sets(p, b, kSets, rng), y.ptr(), b, stream};
        bench_point(o, m, pt, expert_bytes, bw);
      }
    }
  }
  return 0;
}
}  // namespace

int main(int argc, char** argv) {
  return bench::guarded_main("moejit_bench_moe", argc, argv, run);
}
