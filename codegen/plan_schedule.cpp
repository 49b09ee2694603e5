// The compute role's schedule and GEMM1's token-tile pairing, decided per B for plan_launch
// (moe_launch_plan.cpp), which calls them in this order: plan_paired_rows sets tile_n, plan_schedule the
// schedule and its warpgroups.
#include "codegen/plan_steps.hpp"

#include <fmt/format.h>

#include <cmath>

#include "codegen/planner.hpp"
#include "templates/moe_contract.cuh"

namespace moejit::codegen {
namespace {
// The narrowest token tile (wgmma N = 8) covers every segment up to this B on one GPU (plan_paired_rows).
constexpr int k_paired_max_batch = 8;
}  // namespace

double expected_unit_balance(const MoeConfig& config, int batch, int grid) {
  const double e = config.local_experts(), k = config.top_k;
  const double active = e * (1.0 - std::pow(1.0 - k / e, batch)) + (config.shared_expert ? 1 : 0);
  const double units = active * (padded_intermediate(config) / 128);
  return units / (grid * std::ceil(units / grid));
}

// The compute role's schedule; units runs items of kUnitTiles tiles on two consumer warpgroups (a pair each) or
// three (step owners, contract::step_owners); items runs the plan's items whole.
void plan_schedule(MoeLaunchPlan& p, const MoeConfig& config, int batch, const DeviceProfile& device,
                   const MoeCodegenOptions& options, const AtomTraits& atom) {
  auto note = [&p](std::string s) { p.notes.push_back(std::move(s)); };
  const contract::MoeDims dims = workspace_dims(config, p.contract_path);
  // Whole items dealt round-robin, unweighed: the exact path's atoms (every step costs the same), which have run it.
  const bool items_run = config.ranks == 1 && contract::schedule_items_runs(p.contract_path);
  if (options.schedule == Schedule::items && !items_run)
    throw ConfigError("schedule", fmt::format("schedule = items is invalid for the {} atom{}: it runs on the sm_90a "
                                              "exact path's atoms on one GPU (allowed here: stream, or empty as "
                                              "planned)",
                                              atom.name, config.ranks > 1 ? " with expert parallelism" : ""));
  if (options.schedule == Schedule::items || (!options.schedule && items_run && batch <= atom.item_max_batch)) {
    p.schedule = Schedule::items;
    note(fmt::format(
        "schedule items ({}): whole items dealt round-robin over the CTAs, GEMM1's then GEMM2's; none "
        "is cut, so no CTA adds another's partial sums",
        options.schedule ? std::string("set by the options")
                         : fmt::format("B <= {}, the {} atom's measured range", atom.item_max_batch, atom.name)));
    return;
  }
  // The partial rows take the split-K slots' bytes, which grow with the grid: the smallest grid is the bound.
  const bool runs = p.contract_path == contract::kPathSm90Fp8 && config.ranks == 1;
  const bool fits = contract::unit_partials_fit(dims, device.sm_count, batch);
  if (options.schedule == Schedule::units) {
    if (!runs)
      throw ConfigError("schedule", fmt::format("schedule = units is invalid for the {} atom{}: only the "
                                                "sm90-fp8-wgmma atom on one GPU runs it",
                                                atom.name, config.ranks > 1 ? " with expert parallelism" : ""));
    const long long room = contract::unit_rows_room(dims, device.sm_count);
    if (!fits)
      throw ConfigError("schedule", fmt::format("schedule = units is invalid at B = {}: its partial rows take {} B "
                                                "and the workspace holds {} B for them (B <= {})",
                                                batch, contract::unit_partial_bytes(dims, batch), room,
                                                room / contract::unit_partial_bytes(dims, 1)));
    if (options.decoded_scales)
      throw ConfigError("schedule",
                        "schedule = units is invalid with decoded_scales = true: the unit schedule has "
                        "not been run with a decoder warp");
  }
  // Planned only where nothing set asks for what it does not run (one warpgroup, a decoder warp).
  const bool groups_run = options.consumer_groups == 0 || options.consumer_groups == 2 || options.consumer_groups == 3;
  const bool open = !options.schedule && runs && fits;  // the planner may choose the unit schedule
  // Above unit_max_batch, up to unit_balanced_max_batch, the unit schedule is weighed by its balance.
  const bool weighed = open && batch > atom.unit_max_batch && batch <= atom.unit_balanced_max_batch;
  const double balance = expected_unit_balance(config, batch, device.sm_count);
  const bool balanced = weighed && balance >= atom.unit_min_balance;
  const bool planned = open && (batch <= atom.unit_max_batch || balanced) && groups_run && !options.decoded_scales;
  if (options.schedule != Schedule::units && !planned) {
    // Where the unit schedule lost on its balance, say so.
    note(fmt::format("schedule stream: each phase's K128 steps split evenly over the CTAs{}",
                     options.schedule ? std::string(" (set by the options)")
                     : weighed && !balanced
                         ? fmt::format(" (the unit schedule's expected balance over {} CTAs is {:.2f} < {})",
                                       device.sm_count, balance, atom.unit_min_balance)
                         : std::string()));
    return;
  }
  if (!groups_run)
    throw ConfigError("consumer_groups", fmt::format("consumer_groups = {} is invalid with schedule = units: its "
                                                     "GEMM1 items are {} tiles, in pairs over 2 warpgroups or by "
                                                     "steps over 3 (allowed: 2, 3; 0 as planned)",
                                                     options.consumer_groups, contract::kUnitTiles));
  p.schedule = Schedule::units;
  // Step owners (B <= unit_max_batch) run GEMM1 on paired rows (plan_paired_rows); above, the pairs of two
  // warpgroups, which ran faster at B = 2 (the atom's measurements).
  p.groups = options.consumer_groups                                          ? options.consumer_groups
             : p.paired_rows && p.tile_n == 8 && batch <= atom.unit_max_batch ? atom.unit_groups
                                                                              : 2;
  if (contract::step_owners(p.groups, contract::kUnitTiles)) {
    // A step owner holds two passes' sums: at 128 registers they fit beside 8-column tiles only (an expert with
    // more routes runs more token tiles; at the planned B = 1 it has one).
    if (options.tile_n && options.tile_n != 8)
      throw ConfigError("tile_n", fmt::format("tile_n = {} is invalid with schedule = units on 3 consumer warpgroups: "
                                              "their step owners run 8-column token tiles (allowed: 8)",
                                              options.tile_n));
    // Their GEMM1 stages each token's large and small rows side by side in one 8-column tile.
    if (batch > contract::kPairedRows)
      throw ConfigError("consumer_groups",
                        fmt::format("consumer_groups = 3 is invalid with schedule = units at B = {}: the step owners "
                                    "pair at most {} token rows (B <= {}; 2 warpgroups run the schedule at any B it "
                                    "fits)",
                                    batch, contract::kPairedRows, contract::kPairedRows));
    if (!p.paired_rows && options.paired_rows == false)
      throw ConfigError("paired_rows",
                        "paired_rows = off is invalid with schedule = units on 3 consumer warpgroups: "
                        "their step owners run GEMM1 on paired rows (allowed: on, or as planned; or "
                        "consumer_groups = 2)");
    if (!p.paired_rows)  // (B, R and tile_n allow pairing above: the path has no split rows)
      throw ConfigError("consumer_groups",
                        fmt::format("consumer_groups = 3 is invalid with schedule = units on the {} atom: the step "
                                    "owners run GEMM1 on paired split rows, the sm90-fp8-wgmma atom's (allowed: 2)",
                                    atom.name));
  }
  note(fmt::format(
      "schedule units ({}): {} units per active expert (128 intermediate columns each: the GEMM1 rows and the GEMM2 "
      "K block they feed), whole, on {} consumer warpgroups{}; finalize adds the partial rows",
      !planned ? std::string("set by the options")
      : batch <= atom.unit_max_batch
          ? fmt::format("B <= {}, the {} atom's measured range", atom.unit_max_batch, atom.name)
          : fmt::format("B <= {} with an expected balance of {:.2f} >= {} over {} CTAs, the {} atom's measured rule",
                        atom.unit_balanced_max_batch, balance, atom.unit_min_balance, device.sm_count, atom.name),
      padded_intermediate(config) / 128, p.groups,
      contract::step_owners(p.groups, contract::kUnitTiles)
          ? " (step owners: warpgroup w runs steps k = w mod 3 over all 4 tiles; GEMM1's sums meet in shared memory)"
          : " (2 tiles each)"));
}

// GEMM1 on paired split rows (one wgmma of 8 columns a K32 block instead of 16, and half the FP32 promotion) for
// segments of at most contract::kPairedRows rows. On one GPU an expert draws at most B rows of a forward from a
// router that sends each token to k distinct experts: at B <= kPairedRows every segment pairs (a token tile holds
// kPairedRows rows there, so an expert repeated within tokens runs more tiles); at B <= kPairedMaxBatch 8-column
// token tiles cover every segment, and those of more rows run the 16-column split. Above B = 8, up to the atom's
// measured paired_short_max_batch (or wherever MoeCodegenOptions::paired_rows is on), the wider token tiles pair
// their short segments too, the wider segments running the 16- or 32-column split.
void plan_paired_rows(MoeLaunchPlan& p, const MoeConfig& config, int batch, const MoeCodegenOptions& options,
                      const AtomTraits& atom) {
  auto note = [&p](std::string s) { p.notes.push_back(std::move(s)); };
  const bool can = contract::path_split_rows(p.contract_path) && config.ranks == 1;
  if (options.paired_rows == false) {
    if (can) note("GEMM1 rows not paired: paired_rows = off set by the options");
    return;
  }
  if (!can) {
    if (options.paired_rows == true)
      throw ConfigError("paired_rows",
                        fmt::format("paired_rows = on is invalid {}: GEMM1's rows pair on the sm90-fp8-wgmma atom's "
                                    "split rows, on one GPU (allowed: off, or as planned)",
                                    config.ranks != 1 ? std::string("with expert parallelism")
                                                      : fmt::format("on the {} atom", p.atom)));
    return;
  }
  if (batch <= k_paired_max_batch && (!options.tile_n || options.tile_n == 8)) {
    p.paired_rows = true;
    p.tile_n = 8;
    note(batch <= contract::kPairedRows
             ? fmt::format("tile_n = 8, GEMM1 rows paired: at B <= {} an expert's segment has at most {} rows, so "
                           "each token's large and small rows share one 8-column tile (one wgmma of 8 columns a K32 "
                           "block, not 16; --paired-rows off keeps them apart)",
                           contract::kPairedRows, contract::kPairedRows)
             : fmt::format("tile_n = 8, GEMM1 rows paired in segments of at most {} rows: at B <= {} 8-column token "
                           "tiles cover every segment, and those of more rows run the 16-column split "
                           "(--paired-rows off keeps every segment apart)",
                           contract::kPairedRows, k_paired_max_batch));
    return;
  }
  const bool planned = batch > k_paired_max_batch && batch <= atom.paired_short_max_batch;
  if (options.paired_rows == true || planned) {
    p.paired_rows = true;
    note(
        fmt::format("GEMM1 rows paired in segments of at most {} rows ({}): one wgmma of 8 columns a K32 block for "
                    "them; wider segments of the {}-column token tiles run the split on 2N columns",
                    contract::kPairedRows,
                    options.paired_rows ? std::string("set by the options")
                                        : fmt::format("B <= {}, the {} atom's measured range; --paired-rows off keeps "
                                                      "them apart",
                                                      atom.paired_short_max_batch, atom.name),
                    p.tile_n));
    return;
  }
  if (batch <= k_paired_max_batch)
    note(
        fmt::format("GEMM1 rows not paired: tile_n = {} set by the options (--paired-rows on pairs the short "
                    "segments of its tiles)",
                    options.tile_n));
}

// A decode step of at most 32 schedule routes has at most 32 active experts: one warp builds the routing tables from
// a load a lane (route_tables_warp), where the block's tables take ten barriers and scans over E. Measured on the
// unit schedule at B = 1: the tables done 1.3 us after entry against 2.5, on the H200
// (bench/results/2026-12-03-h200-prologue-and-loops.md); 0.9-1.9 us at B = 1-2 on both schedules on an H100
// (bench/results/2026-12-07-h100-s114-s116-warp-tables.md). Planned up to B = 4, where every kernel compiles
// without spills: above, the stream kernels at their 128-register cap spill 12-20 B with it
// (DSV4.1-Flash B = 5, gpt-oss B = 5-8). The kernel compiles the planned builder only: both beside each other had
// moved the stream kernels' allocation into spills at B <= 4 too.
constexpr int k_warp_tables_max_batch = 4;

void plan_routing(MoeLaunchPlan& p, const MoeConfig& config, int batch, const MoeCodegenOptions& options) {
  const int routes = batch * config.top_k + (config.shared_expert ? 1 : 0);
  const std::string why_not = config.ranks != 1 ? std::string("expert parallelism's routes come from every rank")
                              : routes > 32     ? fmt::format("{} schedule routes > 32 (a lane a route)", routes)
                                                : std::string();
  if (options.warp_tables == true && !why_not.empty())
    throw ConfigError("warp_tables",
                      fmt::format("warp_tables = on is invalid here: {} (allowed: off, or as planned)", why_not));
  const bool planned = batch <= k_warp_tables_max_batch;
  p.warp_tables = why_not.empty() && (options.warp_tables == true || (planned && options.warp_tables != false));
  p.notes.push_back(p.warp_tables ? fmt::format("routing tables by one warp: {} schedule routes, a lane each{}", routes,
                                                options.warp_tables ? " (set by the options)" : "")
                    : !why_not.empty() ? fmt::format("routing tables by the block: {}", why_not)
                    : options.warp_tables == false
                        ? std::string("routing tables by the block: warp_tables = off set by the options")
                        : fmt::format("routing tables by the block: B = {} > {}, where the stream kernels "
                                      "spill with the warp's (--warp-tables on sets it)",
                                      batch, k_warp_tables_max_batch));
}

}  // namespace moejit::codegen
