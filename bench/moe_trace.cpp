#include "moe_trace.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <stdexcept>
#include <utility>

#include "bench_common.hpp"
#include "templates/moe_contract.cuh"

namespace moejit::bench {

namespace {
constexpr TraceRow kTraceRows[] = {
    {"entry", "entry_us", contract::kTraceEntry, TraceRow::time},
    {"scheduled", "scheduled_us", contract::kTraceScheduled, TraceRow::time},
    {"activations start", "activations_start_us", contract::kTraceActStart, TraceRow::time},
    {"first weight copy", "first_weight_copy_us", contract::kTraceWeightFirst, TraceRow::time},
    {"first GEMM2 copy", "first_gemm2_copy_us", contract::kTraceWeightPhase1, TraceRow::time},
    {"GEMM1 share done", "gemm1_share_done_us", contract::kTraceConsumerPhase1, TraceRow::time},
    {"last weight copy", "last_weight_copy_us", contract::kTraceWeightLast, TraceRow::time},
    {"consumers done", "consumers_done_us", contract::kTraceConsumerDone, TraceRow::time},
    {"exit", "exit_us", contract::kTraceExit, TraceRow::time},
    {"wait: free stage (weights)", "wait_free_stage_weights_us", contract::kTraceWeightWait, TraceRow::wait},
    {"wait: free stage (acts, warp 0)", "wait_free_stage_acts_us", contract::kTraceActWait, TraceRow::wait},
    {"wait: GEMM2 inputs (acts, warp 0)", "wait_gemm2_inputs_us", contract::kTraceActReadyWait, TraceRow::wait},
    {"wait: split-K pieces", "wait_split_k_pieces_us", contract::kTraceConsumerFlagWait, TraceRow::wait},
    {"finding tile routes (acts, warp 0)", "tile_routes_us", contract::kTraceActRoutes, TraceRow::wait},
    {"GEMM1 K128 steps", "gemm1_steps", contract::kTraceSteps0, TraceRow::count},
    {"GEMM2 K128 steps", "gemm2_steps", contract::kTraceSteps1, TraceRow::count}};
}  // namespace

TraceValues::TraceValues(std::vector<std::uint64_t> t, int g) : grid(g), raw(std::move(t)) {
  for (int c = 0; c < grid; ++c)
    if (at(c, contract::kTraceEntry) != 0) t0 = std::min(t0, at(c, contract::kTraceEntry));  // 0: never entered
}
std::uint64_t TraceValues::at(int cta, int slot) const {
  return raw[std::size_t(cta) * contract::kTraceSlots + slot];
}
double TraceValues::value(int cta, const TraceRow& r) const {
  const std::uint64_t x = at(cta, r.slot);
  if (r.kind == TraceRow::time) return x == 0 ? std::nan("") : double(x - t0) * 1e-3;
  return r.kind == TraceRow::wait ? double(x) * 1e-3 : double(x);
}

void print_trace(const TraceValues& t) {
  fmt::print("  trace over {} compute CTAs (us from the first entry; waits in us): min / median / max\n", t.grid);
  for (const TraceRow& r : kTraceRows) {
    std::vector<double> v;
    for (int c = 0; c < t.grid; ++c)
      if (const double x = t.value(c, r); !std::isnan(x)) v.push_back(x);
    if (v.empty()) continue;
    fmt::print("    {:<28} {:>9.2f} {:>9.2f} {:>9.2f}\n", r.name, percentile(v, 0), percentile(v, 0.5),
               percentile(v, 1));
  }
}

std::string trace_csv_name(const std::string& model, int b, const codegen::MoeLaunchPlan& plan) {
  std::string name = model;
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-') c = '_';
  return fmt::format("trace-{}-B{}-{}-g{}-a{}-x{}-n{}-s{}.csv", name, b, codegen::schedule_name(plan.schedule),
                     plan.groups, plan.activation_warps, plan.compute.blocks_per_sm, plan.tile_n, plan.stages);
}

void write_trace_csv(const TraceValues& t, const std::filesystem::path& file) {
  std::ofstream out(file);
  out << "cta";
  for (const TraceRow& r : kTraceRows) out << ',' << r.column;
  out << '\n';
  for (int c = 0; c < t.grid; ++c) {
    out << c;
    for (const TraceRow& r : kTraceRows) {
      const double x = t.value(c, r);
      out << ',' << (std::isnan(x) ? std::string() : fmt::format("{:.3f}", x));
    }
    out << '\n';
  }
  out.close();  // the last flush's error too
  if (!out) throw std::runtime_error(fmt::format("--trace-csv: could not write {}", file.string()));
  fmt::print("  trace of every CTA: {}\n", file.string());
}

}  // namespace moejit::bench
