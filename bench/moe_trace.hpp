#pragma once
// moejit_bench_moe --trace: the compute role's milestones (contract::TraceSlot), read back from one traced
// forward, summarized over the CTAs or written a row per CTA.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "codegen/moe_launch_plan.hpp"

namespace moejit::bench {

// A milestone of contract::TraceSlot the bench reads: its name in the summary and the CSV, and what it is.
struct TraceRow {
  const char* name;
  const char* column;
  int slot;
  enum { time, wait, count } kind;
};

// One traced forward's slots [grid][kTraceSlots] as values: times in us from the first CTA's entry (NaN where a
// CTA never reached the milestone), waits in us, step counts.
struct TraceValues {
  int grid = 0;
  std::vector<std::uint64_t> raw;
  std::uint64_t t0 = ~0ull;
  TraceValues(std::vector<std::uint64_t> t, int g);
  std::uint64_t at(int cta, int slot) const;
  double value(int cta, const TraceRow& r) const;
};

// The milestones over the compute CTAs, each as min / median / max.
void print_trace(const TraceValues& t);
// One file per model, B and layout of a run (a --config name's other characters become '_').
std::string trace_csv_name(const std::string& model, int b, const codegen::MoeLaunchPlan& plan);
// Every CTA's milestones, a row each (--trace-csv): which CTAs finish last, and what they waited on.
void write_trace_csv(const TraceValues& t, const std::filesystem::path& file);

}  // namespace moejit::bench
