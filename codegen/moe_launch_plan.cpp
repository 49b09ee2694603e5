#include "codegen/moe_launch_plan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "codegen/plan_steps.hpp"
#include "codegen/planner.hpp"
#include "templates/moe_contract.cuh"

namespace moejit::codegen {

int padded_hidden(const MoeConfig& config) {
  // A padded H goes to 256, which made W2's H / 64 row tiles split into items of 4 when every item had to be
  // whole; items of 6 with a shorter last one would run 128 as well (gpt-oss's 2880 -> 2944: 7 items and one of
  // 4), 4% fewer W2 bytes, not measured yet.
  return static_cast<int>(config.hidden % 128 == 0 ? config.hidden : contract::align_up(config.hidden, 256));
}
int padded_intermediate(const MoeConfig& config) {
  return static_cast<int>(contract::align_up(config.intermediate, 128));
}
contract::MoeDims workspace_dims(const MoeConfig& c, int contract_path, int ep) {
  return {c.local_experts(),       c.top_k,          padded_hidden(c),
          padded_intermediate(c),  c.token_capacity, contract_path,
          c.shared_expert ? 1 : 0, c.ranks,          ep & contract::kEpLayoutModes};
}

void validate(const MoeCodegenOptions& o) {
  if (o.tile_n != 0 && o.tile_n != 8 && o.tile_n != 16 && o.tile_n != 32 && o.tile_n != 64)
    throw ConfigError("tile_n",
                      fmt::format("tile_n = {} is invalid: must be 8, 16, 32 or 64 (0: as planned)", o.tile_n));
  if (o.stages < 0 || o.stages > 16 || o.stages == 1)
    throw ConfigError("stages",
                      fmt::format("stages = {} is outside the allowed range [2, 16] (0: as planned)", o.stages));
  if (o.ep_mode && (*o.ep_mode < 0 || *o.ep_mode >= contract::kEpModes))
    throw ConfigError("ep_mode", fmt::format("ep_mode = {} is outside the allowed range [0, {}]", *o.ep_mode,
                                             contract::kEpModes - 1));
  if (o.dispatch_sms && (*o.dispatch_sms < 0 || *o.dispatch_sms > 4096))
    throw ConfigError("dispatch_sms",
                      fmt::format("dispatch_sms = {} is outside the allowed range [0, 4096]", *o.dispatch_sms));
  if (o.activation_warps < 0 || o.activation_warps > contract::kMaxActivationWarps)
    throw ConfigError("activation_warps",
                      fmt::format("activation_warps = {} is outside the allowed range [1, {}] (0: as planned)",
                                  o.activation_warps, contract::kMaxActivationWarps));
  if (o.consumer_groups < 0 || o.consumer_groups > contract::kMaxGroups)
    throw ConfigError("consumer_groups",
                      fmt::format("consumer_groups = {} is outside the allowed range [1, {}] (0: as planned)",
                                  o.consumer_groups, contract::kMaxGroups));
  if (o.ctas_per_sm < 0 || o.ctas_per_sm > 8)
    throw ConfigError("ctas_per_sm", fmt::format("ctas_per_sm = {} is outside the allowed range [1, 8] (0: as planned)",
                                                 o.ctas_per_sm));
}

std::string_view schedule_name(Schedule s) {
  return s == Schedule::units ? "units" : s == Schedule::items ? "items" : "stream";
}
std::optional<Schedule> parse_schedule(std::string_view text) {
  if (text == "stream") return Schedule::stream;
  if (text == "units") return Schedule::units;
  if (text == "items") return Schedule::items;
  return std::nullopt;
}

int compute_tile_n(int r) {
  const double want = r + 3.0 * std::sqrt(double(r));
  int tile = 16;
  while (tile < want && tile < contract::kMaxTileN) tile *= 2;
  return tile;
}

namespace {
// The atom of the options' (or the target's default) path, and what the recipe implies.
const AtomTraits& plan_atom(MoeLaunchPlan& p, const MoeConfig& config, const DeviceProfile& device,
                            const MoeCodegenOptions& options) {
  auto note = [&p](std::string s) { p.notes.push_back(std::move(s)); };
  const ComputePath path = *p.options.path;
  const AtomTraits* atom = find_atom(device.target, path, config.recipe);
  if (!atom)
    throw PlanError(fmt::format("{} ({}) has no {} compute path for recipe {}", device.name, device.target.name(),
                                path_name(path), recipe_name(config.recipe)));
  // W4A16 has one input format, BF16 x: the recipe implies input_bf16.
  if (config.recipe == Recipe::w4a16) p.options.input_bf16 = true;
  p.atom = atom->name;
  p.contract_path = atom->contract_path;
  note(fmt::format("atom {}: {} path on {}{}", atom->name, path_name(path), device.target.name(),
                   options.path ? "" : " (the target's default path)"));
  return *atom;
}

// The token tile from the expected rows per expert.
void plan_tile_n(MoeLaunchPlan& p, const MoeConfig& config, int batch, const MoeCodegenOptions& options,
                 const AtomTraits& atom) {
  auto note = [&p](std::string s) { p.notes.push_back(std::move(s)); };
  const int E = config.local_experts();
  p.rows_per_expert = ceil_div(std::int64_t{batch} * config.top_k, E);
  p.tile_n = options.tile_n ? options.tile_n : std::min(atom.max_tile_n, compute_tile_n(p.rows_per_expert));
  if (p.tile_n > atom.max_tile_n)
    throw ConfigError("tile_n", fmt::format("tile_n = {} is invalid: the {} atom runs token tiles up to {}", p.tile_n,
                                            atom.name, atom.max_tile_n));
  note(fmt::format("tile_n = {}: {}", p.tile_n,
                   options.tile_n ? std::string("set by the options")
                                  : fmt::format("the smallest of 16/32/64 covering r + 3 sqrt(r), r = ceil(B k / L) "
                                                "= ceil({} x {} / {}) = {}, at most the atom's {}",
                                                batch, config.top_k, E, p.rows_per_expert, atom.max_tile_n)));
}

// The consumer warpgroups of a compute CTA.
void plan_groups(MoeLaunchPlan& p, const MoeConfig& config, const MoeCodegenOptions& options, const AtomTraits& atom) {
  auto note = [&p](std::string s) { p.notes.push_back(std::move(s)); };
  p.groups = atom.groups;
  if (options.consumer_groups) {
    if (options.consumer_groups != atom.groups && atom.tiles == atom.groups)
      throw ConfigError("consumer_groups",
                        fmt::format("consumer_groups = {} is invalid for the {} atom: it runs {} warpgroup(s) of "
                                    "one tile each (0: as planned)",
                                    options.consumer_groups, atom.name, atom.groups));
    p.groups = options.consumer_groups;
    note(fmt::format("{} consumer warpgroup(s) (set by the options; the atom's: {})", p.groups, atom.groups));
  } else if (config.ranks > 1 && p.groups > 2) {
    // Expert parallelism's compute role holds its route spans beside the loops: at the 128 registers of three
    // consumer warpgroups they spill (tests/unit/test_ep.cpp), at the 168 of two they do not.
    p.groups = 2;
    note(fmt::format("expert parallelism: {} consumer warpgroups, not the atom's {} (its route spans' registers)",
                     p.groups, atom.groups));
  }
}

// Programmatic dependent launch between the roles.
void plan_pdl(MoeLaunchPlan& p, const MoeConfig& config, int batch, const AtomTraits& atom) {
  auto note = [&p](std::string s) { p.notes.push_back(std::move(s)); };
  p.pdl = config.ranks == 1 && batch <= atom.pdl_max_batch;
  if (p.pdl)
    note(
        fmt::format("pdl: the compute role's routing prologue and first weight copies run beside the dispatch role "
                    "(B <= {}, the {} atom's measured range)",
                    atom.pdl_max_batch, atom.name));
}
}  // namespace

// heuristic: every step below decides from the ones before it (codegen/plan_steps.hpp); then the workspace.
MoeLaunchPlan plan_launch(const MoeConfig& config, int batch, const DeviceProfile& device,
                          const MoeCodegenOptions& options) {
  validate(config);
  validate_batch(config, batch);
  validate(device);
  validate(options);
  MoeLaunchPlan p;
  p.model = config.name;
  p.device = device.name;
  p.target = std::string(device.target.name());
  p.batch = batch;
  p.options = options;
  p.options.path = resolve_path(options.path, device.target.arch, config.recipe);
  const AtomTraits& atom = plan_atom(p, config, device, options);
  plan_tile_n(p, config, batch, options, atom);
  plan_paired_rows(p, config, batch, options, atom);
  plan_groups(p, config, options, atom);
  plan_schedule(p, config, batch, device, options, atom);
  plan_pdl(p, config, batch, atom);
  plan_items(p, config, batch, atom);
  plan_weight_scales(p, config, batch, options, atom);
  // Expert parallelism's decisions; a dispatch split leaves SMs out of the compute grid.
  p.ep = plan_ep(config, batch, device.sm_count, options, p.notes);
  plan_routing(p, config, batch, options);
  plan_compute(p, config, batch, device, options, atom);
  plan_dispatch(p, config, batch, device, options);
  plan_finalize(p, config, batch, device);
  const contract::MoeDims dims = workspace_dims(config, p.contract_path, p.ep.mode);
  p.workspace_bytes = contract::workspace_bytes(dims, p.compute.grid);
  return p;
}

void override_pdl(MoeLaunchPlan& plan, std::optional<bool> pdl) {
  if (!pdl) return;
  std::erase_if(plan.notes, [](const std::string& n) { return n.starts_with("pdl"); });
  plan.pdl = *pdl;
  plan.notes.push_back(fmt::format("pdl {} (set by the options)", plan.pdl ? "on" : "off"));
}

void to_json(nlohmann::json& j, const RolePlan& r) {
  j = {{"launched", r.launched},
       {"grid", r.grid},
       {"threads", r.threads},
       {"smem_bytes", r.smem_bytes},
       {"blocks_per_sm", r.blocks_per_sm},
       {"register_cap", r.register_cap}};
}

void to_json(nlohmann::json& j, const MoeLaunchPlan& p) {
  j = {{"model", p.model},
       {"device", p.device},
       {"target", p.target},
       {"batch", p.batch},
       {"path", path_name(*p.options.path)},
       {"input_bf16", p.options.input_bf16},
       {"atom", p.atom},
       {"rows_per_expert", p.rows_per_expert},
       {"groups", p.groups},
       {"tiles", p.tiles},
       {"tile_n", p.tile_n},
       {"stages", p.stages},
       {"paired_rows", p.paired_rows},
       {"schedule", schedule_name(p.schedule)},
       {"pdl", p.pdl},
       {"decoded_scales", p.decoded_scales},
       {"activation_warps", p.activation_warps},
       {"subnormal_weight_scales", p.subnormal_weight_scales},
       {"token_frame", p.token_frame},
       {"warp_tables", p.warp_tables},
       {"ep", {{"mode", p.ep.mode}, {"modes", ep_mode_names(p.ep.mode)}, {"dispatch_sms", p.ep.dispatch_sms}}},
       {"dispatch", p.dispatch},
       {"compute", p.compute},
       {"finalize", p.finalize},
       {"workspace_bytes", p.workspace_bytes},
       {"notes", p.notes}};
}

}  // namespace moejit::codegen
