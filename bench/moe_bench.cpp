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
// --trace-csv DIR also writes every CTA's milestones, a CSV per B.
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "bench_common.hpp"
#include "moe_trace.hpp"
#include "oracle/moe_check.hpp"
#include "runtime/moe_layer.hpp"
#include "templates/moe_contract.cuh"

using namespace moejit;

namespace {
constexpr const char* kHelp = R"(usage: moejit_bench_moe [options]

Latency of the fused MoE layer on GPU 0 against its HBM floor (METHOD.md): CUDA events around replays of a
CUDA graph of 4 forwards over different inputs (uniform routing), after warm-up; the median of 30 replays.
The floor is the packed bytes of the experts the routing touches over the measured device copy bandwidth.
One row per model and B:
  experts    experts touched per forward (mean of the 4 input sets)
  floor_us   their bytes at the copy bandwidth          median_us  the layer, per forward
  %floor     floor_us / median_us                       disp_us, comp_us, fin_us  per role, eager, with events
  sm_MHz     the SM clock right after the replays (consumer-bound points move with it)
  and the plan that ran: tile_n/stages, CTAs per SM, consumer warpgroups, schedule, pdl, paired (GEMM1 rows),
  frame (GEMM1's rows in one scale frame per token), tables (the routing tables by one warp or by the block).

options:
  --batches 1,8,...        batch sizes B (default 1,2,4,8,16,32,64,128,256); --quick: 1,8,64,256
  --model M                one built-in model: glm5.2, dsv4.1-flash, gpt-oss-120b, gpt-oss-20b
                           (default: glm5.2, dsv4.1-flash, gpt-oss-120b)
  --config FILE            a JSON model config (moejit plan --help) instead of the built-ins
  --path fast|exact        the compute path (default: the target's, fast on sm_90a)
  --recipe w4a8-mx|w4a16   the quantization recipe (w4a16 implies --input-bf16)
  --input-bf16             BF16 x, quantized by the dispatch role
  --shared-expert          fuse the model's shared expert (glm5.2, dsv4.1-flash)
  --tile-n N, --stages S   override the planner's token tile width and ring depth
  --ctas-per-sm 1,2,3      compute CTAs per SM to sweep (0: as planned)
  --consumer-groups 2,3    consumer warpgroups to sweep (0: as planned)
  --activation-warps 1,0   activation producer warps to sweep (0: as planned)
  --schedule planned,stream,units,items   schedules to sweep
  --paired-rows planned,on,off   GEMM1's short segments paired (MoeCodegenOptions::paired_rows) to sweep
  --token-frame planned,on,off   GEMM1's rows in one scale frame per token (MoeCodegenOptions::token_frame) to sweep
  --warp-tables planned,on,off   the routing tables by one warp or by the block (MoeCodegenOptions::warp_tables) to sweep
                           (on is refused at a B of more than 32 routes: sweep it with --batches 1,2,3,4)
  --decoded-scales         the decoder-warp variant (MoeCodegenOptions::decoded_scales)
  --pdl | --no-pdl         programmatic dependent launch between the roles (default: as planned)
  --sm-count N             plan and launch the roles for N SMs (MoeLayerOptions::sm_count; 0: all). Fewer SMs
                           ask each one for more bytes a clock: on an H100 (3.0 TB/s), N = 80-88 asks what the
                           H200 (4.26 TB/s at 1.68-1.85 GHz) asks of all 132, so the consumer-bound points show.
                           The floor stays the whole device's copy bandwidth. The compute grid's N CTAs (one a SM
                           where the plan says 1 CTA/SM) run on N SMs; the dispatch and finalize grids are planned
                           for N SMs but may run on any
  --trace                  per B, where the compute role's time goes: each CTA milestone, min / median / max
  --trace-csv DIR          --trace, and every CTA's milestones in DIR/trace-<model>-B<b>-<layout>.csv
  --leave-out dispatch,finalize   per B, the same replays with that role left out of the graph (each a row
                           "without ROLE": its median and how much less than the whole layer): a role's share
                           of the layer's time, overlap included. A diagnostic: without dispatch the compute
                           role reads the GEMM1 rows the last dispatch left, so y is not checked; finalize is
                           not left out of the unit schedule's forwards (B = 1-2), whose finalize grid ends
                           the forward (resets the GEMM2 readiness counters)
  --help                   this text

Exit status: 0 done; 1 an error (named on stderr); 2 a usage error; 77 no GPU (skipped).
)";
constexpr int kSets = 4;
constexpr int kReplays = 30;
using bench::elapsed_ms;
using bench::print_trace;
using bench::trace_csv_name;
using bench::TraceValues;
using bench::write_trace_csv;

double median(const std::vector<double>& v) {
  return bench::percentile(v, 0.5);
}

struct Model {
  std::string name;
  codegen::MoeConfig config;
};

}  // namespace

namespace {
int run(int argc, char** argv) {
  std::vector<int> batches = {1, 2, 4, 8, 16, 32, 64, 128, 256};
  std::vector<Model> models = {{"glm5.2", codegen::builtin_model("glm5.2")},
                               {"dsv4.1-flash", codegen::builtin_model("dsv4.1-flash")},
                               {"gpt-oss-120b", codegen::builtin_model("gpt-oss-120b")}};
  // Tuning sweeps: --ctas-per-sm 2,3,4 and --consumer-groups 2,3 (each value, and each pair, a layer; 0 = as
  // planned), --model glm5.2
  std::vector<int> ctas_list = {0}, groups_list = {0}, act_list = {0};
  std::vector<std::optional<codegen::Schedule>> schedule_list = {
      std::nullopt};                                              // --schedule planned,stream,units,items
  std::vector<std::optional<bool>> paired_list = {std::nullopt};  // --paired-rows planned,on,off
  std::vector<std::optional<bool>> frame_list = {std::nullopt};   // --token-frame planned,on,off
  std::vector<std::optional<bool>> tables_list = {std::nullopt};  // --warp-tables planned,on,off
  codegen::MoeCodegenOptions codegen_options;
  codegen::Recipe recipe = codegen::Recipe::w4a8_mx;
  bool shared_expert = false;
  bool trace = false;
  std::filesystem::path trace_dir;     // --trace-csv DIR: empty, no CSV
  std::optional<bool> pdl;             // MoeLayerOptions::pdl: as planned unless --pdl / --no-pdl
  std::vector<std::string> leave_out;  // --leave-out dispatch,finalize
  int sm_count = 0;                    // MoeLayerOptions::sm_count: 0, the device's
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      fmt::print("{}", kHelp);
      return 0;
    } else if (a == "--quick")
      batches = {1, 8, 64, 256};
    else if (a == "--batches" && i + 1 < argc)
      batches = bench::parse_int_list(a, argv[++i]);
    else if (a == "--ctas-per-sm" && i + 1 < argc)
      ctas_list = bench::parse_int_list(a, argv[++i]);
    else if (a == "--consumer-groups" && i + 1 < argc)
      groups_list = bench::parse_int_list(a, argv[++i]);
    else if (a == "--activation-warps" && i + 1 < argc)
      act_list = bench::parse_int_list(a, argv[++i]);
    else if (a == "--schedule" && i + 1 < argc) {
      schedule_list.clear();
      for (const std::string& name : bench::split_list(argv[++i])) {
        if (name == "planned")
          schedule_list.push_back(std::nullopt);
        else if (const auto s = codegen::parse_schedule(name))
          schedule_list.push_back(*s);
        else
          throw std::invalid_argument(
              fmt::format("--schedule: '{}' is not one of planned, stream, units, items", name));
      }
    } else if (a == "--paired-rows" && i + 1 < argc) {
      paired_list = bench::parse_switch_list(a, argv[++i]);
    } else if (a == "--token-frame" && i + 1 < argc) {
      frame_list = bench::parse_switch_list(a, argv[++i]);
    } else if (a == "--warp-tables" && i + 1 < argc) {
      tables_list = bench::parse_switch_list(a, argv[++i]);
    } else if (a == "--model" && i + 1 < argc) {
      const std::string name = argv[++i];
      models = {{name, codegen::builtin_model(name)}};
    } else if (a == "--config" && i + 1 < argc) {  // a JSON config (moejit plan --help) instead of the built-ins
      const codegen::MoeConfig c = codegen::load_moe_config(argv[++i]);
      models = {{c.name, c}};
    } else if (a == "--path" && i + 1 < argc) {
      const std::string name = argv[++i];
      const auto path = codegen::parse_path(name);
      if (!path) throw std::invalid_argument(fmt::format("--path: '{}' is not one of fast, exact", name));
      codegen_options.path = *path;
    } else if (a == "--tile-n" && i + 1 < argc)
      codegen_options.tile_n = bench::parse_int(a, argv[++i]);
    else if (a == "--stages" && i + 1 < argc)
      codegen_options.stages = bench::parse_int(a, argv[++i]);
    else if (a == "--decoded-scales")
      codegen_options.decoded_scales = true;
    else if (a == "--input-bf16")
      codegen_options.input_bf16 = true;
    else if (a == "--shared-expert")  // the built-in models that have one (glm5.2, dsv4.1-flash), fused
      shared_expert = true;
    else if (a == "--trace")
      trace = true;
    else if (a == "--trace-csv" && i + 1 < argc) {  // --trace, and every CTA's milestones into DIR
      trace = true;
      trace_dir = argv[++i];
      if (!std::filesystem::is_directory(trace_dir))
        throw std::invalid_argument(fmt::format("--trace-csv: '{}' is not a directory", trace_dir.string()));
    } else if (a == "--leave-out" && i + 1 < argc) {
      leave_out = bench::split_list(argv[++i]);
      for (const std::string& role : leave_out)
        if (role != "dispatch" && role != "finalize")
          throw std::invalid_argument(fmt::format("--leave-out: '{}' is not one of dispatch, finalize", role));
    } else if (a == "--pdl")  // MoeLayerOptions::pdl: programmatic dependent launch between the roles
      pdl = true;
    else if (a == "--no-pdl")
      pdl = false;
    else if (a == "--sm-count" && i + 1 < argc)
      sm_count = bench::parse_int(a, argv[++i]);
    else if (a == "--recipe" && i + 1 < argc) {
      const std::string name = argv[++i];
      const auto parsed = codegen::parse_recipe(name);
      if (!parsed)
        throw std::invalid_argument(
            fmt::format("--recipe: '{}' is not {}", name, codegen::names_of(codegen::k_recipes, codegen::recipe_name)));
      recipe = *parsed;
      if (recipe == codegen::Recipe::w4a16) codegen_options.input_bf16 = true;  // its activations are BF16
    } else {
      fmt::print(stderr, "moejit_bench_moe: unknown option or missing value: '{}' (moejit_bench_moe --help)\n", a);
      return 2;
    }
  }

  // Every override, layout value and batch size is checked before the device is touched, so a bad one is named
  // (not reported as a skip where there is no GPU, nor found after minutes of other layers).
  for (int ctas : ctas_list)
    for (int groups : groups_list)
      for (int act : act_list) {
        codegen::MoeCodegenOptions o = codegen_options;
        o.ctas_per_sm = ctas, o.consumer_groups = groups, o.activation_warps = act;
        codegen::validate(o);
      }
  for (const Model& m : models)
    for (int b : batches) codegen::validate_batch(m.config, b);
  constexpr int kMaxSms = 4096;  // MoeLayerOptions::sm_count's bound; the device's own count is checked below
  if (sm_count < 0 || sm_count > kMaxSms)
    throw std::invalid_argument(fmt::format("--sm-count: {} is outside the allowed range [0, {}]", sm_count, kMaxSms));
  runtime::ScopedContext ctx(0);
  const runtime::DeviceInfo dev = runtime::query_device(0);
  if (sm_count > dev.sm_count)  // before the copy-bandwidth measurement and any layer
    throw std::invalid_argument(fmt::format("--sm-count: {} is outside the allowed range [0, {}] (the {}'s SMs)",
                                            sm_count, dev.sm_count, dev.name));
  CUstream stream;
  MOEJIT_CU(cuStreamCreate, &stream, CU_STREAM_NON_BLOCKING);
  const double bw = bench::copy_bandwidth_gbs(stream);
  fmt::print(
      "device {} ({} SMs{}), copy bandwidth {:.0f} GB/s (read+write), SM clock {:.0f} MHz, path {}, recipe {}{}\n",
      dev.name, dev.sm_count, sm_count ? fmt::format(", the layers planned and launched on {}", sm_count) : "", bw,
      bench::sm_clock_mhz(stream),
      codegen::path_name(codegen::resolve_path(codegen_options.path, codegen::Arch::sm_90a, recipe)),
      codegen::recipe_name(recipe), codegen_options.input_bf16 ? ", BF16 x" : "");
  fmt::print("{:<19} {:>4} {:>7} {:>10} {:>10} {:>7} {:>9} {:>9} {:>9} {:>7}  {}\n", "model", "B", "experts",
             "floor_us", "median_us", "%floor", "disp_us", "comp_us", "fin_us", "sm_MHz",
             "tile_n/stages xCTAs groups act-warps schedule pdl paired frame tables");

  if (shared_expert) {
    std::vector<Model> with;
    for (const Model& m : models) {
      if (m.config.shared_expert) {
        with.push_back({m.name + "+shared", m.config});
        continue;
      }
      try {  // a built-in model with a shared expert (seed Table 4); the others have none
        with.push_back({m.name + "+shared", codegen::builtin_model(m.name, /*shared_expert=*/true)});
      } catch (const std::invalid_argument&) {
      }
    }
    if (with.empty()) {
      fmt::print(stderr, "--shared-expert: none of the models has a shared expert (glm5.2 and dsv4.1-flash do)\n");
      return 2;
    }
    models = with;
  }

  // CTAs per SM, groups, schedule, activation warps, pairing, token frame, warp tables
  std::vector<std::tuple<int, int, std::optional<codegen::Schedule>, int, std::optional<bool>, std::optional<bool>,
                         std::optional<bool>>>
      layouts;
  for (int ctas : ctas_list)
    for (int groups : groups_list)
      for (const auto& schedule : schedule_list)
        for (int act : act_list)
          for (const auto& paired : paired_list)
            for (const auto& frame : frame_list)
              for (const auto& tables : tables_list)
                layouts.emplace_back(ctas, groups, schedule, act, paired, frame, tables);
  std::mt19937_64 rng(std::random_device{}());
  for (const Model& m : models) {
    codegen::MoeConfig config = m.config;
    config.recipe = recipe;
    const reference::MoeProblem p = oracle::problem_of(config);
    const oracle::RandomWeights weights = oracle::random_weights(p, rng(), {}, config.biases);
    for (const auto& [ctas, groups, schedule, act, paired, frame, tables] : layouts) {
      runtime::MoeLayerOptions options;
      options.check_routes_on_host = false;  // graph capture: no host copies inside forward
      options.codegen = codegen_options;
      options.codegen.ctas_per_sm = ctas;
      options.codegen.consumer_groups = groups;
      options.codegen.schedule = schedule;
      options.codegen.activation_warps = act;
      options.codegen.paired_rows = paired;
      options.codegen.token_frame = frame;
      options.codegen.warp_tables = tables;
      options.pdl = pdl;
      options.sm_count = sm_count;
      runtime::MoeLayer layer(config, weights.device(), options);
      const double expert_bytes = bench::expert_bytes(p, config.biases);
      runtime::DeviceBuffer y(std::size_t(*std::max_element(batches.begin(), batches.end())) * p.hidden * 2);
      for (int b : batches) {
        std::vector<bench::InputSet> sets = bench::make_input_sets(p, b, kSets, rng);
        double touched = 0;
        for (const bench::InputSet& s : sets) touched += s.touched / kSets;
        if (config.shared_expert) touched += 1;  // every token reaches it
        auto args = [&](bench::InputSet& s) {
          return runtime::MoeForwardArgs{s.xq.ptr(), s.xs.ptr(), s.xb.ptr(), s.ids.ptr(), s.w.ptr(), y.ptr(), b};
        };
        // Warm-up (and the one-time JIT for this batch size), then capture.
        for (int i = 0; i < 3; ++i)
          for (bench::InputSet& s : sets) layer.forward(args(s), stream);
        MOEJIT_CU(cuStreamSynchronize, stream);
        // The median over replays of a graph that `capture` records, per forward.
        auto replays_us = [&](auto&& capture) {
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
        };
        const double med = replays_us([&] {
          for (bench::InputSet& s : sets) layer.forward(args(s), stream);
        });
        const double mhz = bench::sm_clock_mhz(stream);  // right after the replays: the clock they ran at
        // Per-role split, eager.
        runtime::RoleEvents ev;
        for (CUevent* e : {&ev.start, &ev.dispatched, &ev.computed, &ev.finalized})
          MOEJIT_CU(cuEventCreate, e, CU_EVENT_DEFAULT);
        std::vector<double> d, c, f;
        for (int i = 0; i < 5; ++i)
          for (bench::InputSet& s : sets) {
            layer.forward(args(s), stream, &ev);
            MOEJIT_CU(cuEventSynchronize, ev.finalized);
            d.push_back(elapsed_ms(ev.start, ev.dispatched) * 1e3);
            c.push_back(elapsed_ms(ev.dispatched, ev.computed) * 1e3);
            f.push_back(elapsed_ms(ev.computed, ev.finalized) * 1e3);
          }
        const double floor_us = touched * expert_bytes / (bw * 1e9) * 1e6;
        const codegen::MoeLaunchPlan plan = layer.plan(b);
        fmt::print(
            "{:<19} {:>4} {:>7.1f} {:>10.1f} {:>10.1f} {:>6.1f}% {:>9.1f} {:>9.1f} {:>9.1f} {:>7.0f}  {}/{} x{} g{} "
            "a{} "
            "{} {} {} {} {}\n",
            m.name, b, touched, floor_us, med, 100.0 * floor_us / med, median(d), median(c), median(f), mhz,
            plan.tile_n, plan.stages, plan.compute.blocks_per_sm, plan.groups, plan.activation_warps,
            codegen::schedule_name(plan.schedule), plan.pdl ? "pdl" : "-", plan.paired_rows ? "paired" : "-",
            plan.token_frame ? "frame" : "-", plan.warp_tables ? "warp" : "block");
        if (!leave_out.empty()) {
          // The same forwards launched role by role (programmatic edges as planned) into one capture, whole and
          // less each role: the differences are the roles' shares, overlap included.
          auto launched_us = [&](const std::string& left_out) {
            return replays_us([&] {
              for (bench::InputSet& s : sets) {
                std::vector<runtime::RoleLaunch> roles = layer.launches(args(s), stream);
                std::erase_if(roles, [&](const runtime::RoleLaunch& r) { return r.role == left_out; });
                runtime::launch_roles(roles, stream, plan.pdl);
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
        if (trace) {
          // The last of a rotation over the sets (so the weights come from HBM), through its own graph.
          const std::size_t slots = std::size_t(plan.compute.grid) * contract::kTraceSlots;
          runtime::DeviceBuffer buffer(slots * 8);
          for (bench::InputSet& s : sets) {
            // Zeroed before each forward: the split-K wait slot accumulates (contract::TraceSlot).
            MOEJIT_CU(cuMemsetD8Async, buffer.ptr(), 0, slots * 8, stream);
            runtime::MoeForwardArgs traced = args(s);
            traced.trace = buffer.ptr();
            layer.forward(traced, stream);
          }
          std::vector<std::uint64_t> t(slots);
          MOEJIT_CU(cuStreamSynchronize, stream);
          MOEJIT_CU(cuMemcpyDtoH, t.data(), buffer.ptr(), slots * 8);
          const TraceValues values(std::move(t), plan.compute.grid);
          print_trace(values);
          if (!trace_dir.empty()) write_trace_csv(values, trace_dir / trace_csv_name(m.name, b, plan));
        }
        std::fflush(stdout);
      }
    }
  }
  return 0;
}
}  // namespace

int main(int argc, char** argv) {
  return bench::guarded_main("moejit_bench_moe", argc, argv, run);
}
