// moejit_bench_moe's command line (moe_bench_options.hpp).
#include "moe_bench_options.hpp"

#include <fmt/format.h>

#include <stdexcept>

#include "bench_common.hpp"

namespace moejit::bench {

namespace {
constexpr const char* kMoeBenchHelp = R"(usage: moejit_bench_moe [options]

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

constexpr int kMaxSms = 4096;  // MoeLayerOptions::sm_count's bound; the device's own count is checked when opened

std::vector<std::optional<codegen::Schedule>> parse_schedule_list(const std::string& text) {
  std::vector<std::optional<codegen::Schedule>> list;
  for (const std::string& name : split_list(text)) {
    if (name == "planned")
      list.push_back(std::nullopt);
    else if (const auto s = codegen::parse_schedule(name))
      list.push_back(*s);
    else
      throw std::invalid_argument(fmt::format("--schedule: '{}' is not one of planned, stream, units, items", name));
  }
  return list;
}

// --shared-expert: each model with its shared expert fused (the built-in models that have one, seed Table 4).
std::vector<MoeBenchModel> with_shared_experts(const std::vector<MoeBenchModel>& models) {
  std::vector<MoeBenchModel> with;
  for (const MoeBenchModel& m : models) {
    if (m.config.shared_expert) {
      with.push_back({m.name + "+shared", m.config});
      continue;
    }
    try {
      with.push_back({m.name + "+shared", codegen::builtin_model(m.name, /*shared_expert=*/true)});
    } catch (const std::invalid_argument&) {  // the others have none
    }
  }
  return with;
}
}  // namespace

runtime::MoeLayerOptions MoeBenchOptions::layer_options(const MoeBenchVariant& v) const {
  runtime::MoeLayerOptions options;
  options.check_routes_on_host = false;  // graph capture: no host copies inside forward
  options.codegen = codegen;
  options.codegen.ctas_per_sm = v.ctas_per_sm;
  options.codegen.consumer_groups = v.consumer_groups;
  options.codegen.schedule = v.schedule;
  options.codegen.activation_warps = v.activation_warps;
  options.codegen.paired_rows = v.paired_rows;
  options.codegen.token_frame = v.token_frame;
  options.codegen.warp_tables = v.warp_tables;
  options.pdl = pdl;
  options.sm_count = sm_count;
  return options;
}

std::optional<int> parse_moe_bench_options(int argc, char** argv, MoeBenchOptions& o) {
  o.models = {{"glm5.2", codegen::builtin_model("glm5.2")},
              {"dsv4.1-flash", codegen::builtin_model("dsv4.1-flash")},
              {"gpt-oss-120b", codegen::builtin_model("gpt-oss-120b")}};
  // The sweeps (each value, and each combination, a layer; 0 or planned: as planned).
  std::vector<int> ctas_list = {0}, groups_list = {0}, act_list = {0};
  std::vector<std::optional<codegen::Schedule>> schedule_list = {std::nullopt};
  std::vector<std::optional<bool>> paired_list = {std::nullopt}, frame_list = {std::nullopt},
                                   tables_list = {std::nullopt};
  bool shared_expert = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool value = i + 1 < argc;
    if (a == "--help" || a == "-h") {
      fmt::print("{}", kMoeBenchHelp);
      return 0;
    } else if (a == "--quick")
      o.batches = {1, 8, 64, 256};
    else if (a == "--batches" && value)
      o.batches = parse_int_list(a, argv[++i]);
    else if (a == "--ctas-per-sm" && value)
      ctas_list = parse_int_list(a, argv[++i]);
    else if (a == "--consumer-groups" && value)
      groups_list = parse_int_list(a, argv[++i]);
    else if (a == "--activation-warps" && value)
      act_list = parse_int_list(a, argv[++i]);
    else if (a == "--schedule" && value)
      schedule_list = parse_schedule_list(argv[++i]);
    else if (a == "--paired-rows" && value)
      paired_list = parse_switch_list(a, argv[++i]);
    else if (a == "--token-frame" && value)
      frame_list = parse_switch_list(a, argv[++i]);
    else if (a == "--warp-tables" && value)
      tables_list = parse_switch_list(a, argv[++i]);
    else if (a == "--model" && value) {
      const std::string name = argv[++i];
      o.models = {{name, codegen::builtin_model(name)}};
    } else if (a == "--config" && value) {  // a JSON config (moejit plan --help) instead of the built-ins
      const codegen::MoeConfig c = codegen::load_moe_config(argv[++i]);
      o.models = {{c.name, c}};
    } else if (a == "--path" && value) {
      const std::string name = argv[++i];
      const auto path = codegen::parse_path(name);
      if (!path) throw std::invalid_argument(fmt::format("--path: '{}' is not one of fast, exact", name));
      o.codegen.path = *path;
    } else if (a == "--tile-n" && value)
      o.codegen.tile_n = parse_int(a, argv[++i]);
    else if (a == "--stages" && value)
      o.codegen.stages = parse_int(a, argv[++i]);
    else if (a == "--decoded-scales")
      o.codegen.decoded_scales = true;
    else if (a == "--input-bf16")
      o.codegen.input_bf16 = true;
    else if (a == "--shared-expert")
      shared_expert = true;
    else if (a == "--trace")
      o.trace = true;
    else if (a == "--trace-csv" && value) {
      o.trace = true;
      o.trace_dir = argv[++i];
      if (!std::filesystem::is_directory(o.trace_dir))
        throw std::invalid_argument(fmt::format("--trace-csv: '{}' is not a directory", o.trace_dir.string()));
    } else if (a == "--leave-out" && value) {
      o.leave_out = split_list(argv[++i]);
      for (const std::string& role : o.leave_out)
        if (role != "dispatch" && role != "finalize")
          throw std::invalid_argument(fmt::format("--leave-out: '{}' is not one of dispatch, finalize", role));
    } else if (a == "--pdl")
      o.pdl = true;
    else if (a == "--no-pdl")
      o.pdl = false;
    else if (a == "--sm-count" && value)
      o.sm_count = parse_int(a, argv[++i]);
    else if (a == "--recipe" && value) {
      const std::string name = argv[++i];
      const auto parsed = codegen::parse_recipe(name);
      if (!parsed)
        throw std::invalid_argument(
            fmt::format("--recipe: '{}' is not {}", name, codegen::names_of(codegen::k_recipes, codegen::recipe_name)));
      o.recipe = *parsed;
      if (o.recipe == codegen::Recipe::w4a16) o.codegen.input_bf16 = true;  // its activations are BF16
    } else {
      fmt::print(stderr, "moejit_bench_moe: unknown option or missing value: '{}' (moejit_bench_moe --help)\n", a);
      return 2;
    }
  }

  o.variants.clear();
  for (int ctas : ctas_list)
    for (int groups : groups_list)
      for (const auto& schedule : schedule_list)
        for (int act : act_list)
          for (const auto& paired : paired_list)
            for (const auto& frame : frame_list)
              for (const auto& tables : tables_list)
                o.variants.push_back({ctas, groups, act, schedule, paired, frame, tables});
  for (const MoeBenchVariant& v : o.variants) codegen::validate(o.layer_options(v).codegen);
  for (const MoeBenchModel& m : o.models)
    for (int b : o.batches) codegen::validate_batch(m.config, b);
  if (o.sm_count < 0 || o.sm_count > kMaxSms)
    throw std::invalid_argument(
        fmt::format("--sm-count: {} is outside the allowed range [0, {}]", o.sm_count, kMaxSms));
  if (shared_expert) {
    o.models = with_shared_experts(o.models);
    if (o.models.empty()) {
      fmt::print(stderr,
                 "moejit_bench_moe: --shared-expert: none of the models has a shared expert (glm5.2 and dsv4.1-flash "
                 "do)\n");
      return 2;
    }
  }
  for (MoeBenchModel& m : o.models) m.config.recipe = o.recipe;

  return std::nullopt;
}

}  // namespace moejit::bench
