#include "codegen/moe_launch_plan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "codegen/plan_schedule.hpp"
#include "codegen/planner.hpp"
#include "templates/moe_contract.cuh"

namespace moejit::codegen {
namespace {
constexpr int k_dispatch_threads = 256;
constexpr int k_finalize_threads = 256;
// The streaming roles run grid-stride loops: at most two CTAs per SM, each
// with several 16-byte loads in flight per thread, move their few MB at the
// copy rate; more CTAs only add launch work.
constexpr int k_streaming_ctas_per_sm = 2;
constexpr int k_max_stages = 12;
// What the driver keeps per resident block on sm_90 and sm_120 (cudaDevAttrReservedSharedMemoryPerBlock).
constexpr int k_reserved_smem_per_block = 1024;

int ceil_div(std::int64_t a, std::int64_t b) {
  return static_cast<int>((a + b - 1) / b);
}

// The register cap that lets `ctas` blocks of `threads` be resident: the
// register file is four sub-partitions of regs_per_sm / 4, each holding a
// quarter of the warps (rounded up), so the cap is what the fullest one allows,
// a multiple of 8 (the per-thread allocation granularity), 255 at most.
int register_cap_for(int regs_per_sm, int threads, int ctas) {
  return std::min(255, regs_per_sm / 4 / (32 * contract::scheduler_warps(ctas, threads)) / 8 * 8);
}
}  // namespace

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
  return s == Schedule::units ? "units" : "stream";
}
std::optional<Schedule> parse_schedule(std::string_view text) {
  if (text == "stream") return Schedule::stream;
  if (text == "units") return Schedule::units;
  return std::nullopt;
}

int compute_tile_n(int r) {
  const double want = r + 3.0 * std::sqrt(double(r));
  int tile = 16;
  while (tile < want && tile < contract::kMaxTileN) tile *= 2;
  return tile;
}

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
  const ComputePath path = *p.options.path;
  auto note = [&p](std::string s) { p.notes.push_back(std::move(s)); };

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

  const int E = config.local_experts();
  p.rows_per_expert = ceil_div(std::int64_t{batch} * config.top_k, E);
  p.tile_n = options.tile_n ? options.tile_n : std::min(atom->max_tile_n, compute_tile_n(p.rows_per_expert));
  if (p.tile_n > atom->max_tile_n)
    throw ConfigError("tile_n", fmt::format("tile_n = {} is invalid: the {} atom runs token tiles up to {}", p.tile_n,
                                            atom->name, atom->max_tile_n));
  note(fmt::format("tile_n = {}: {}", p.tile_n,
                   options.tile_n ? std::string("set by the options")
                                  : fmt::format("the smallest of 16/32/64 covering r + 3 sqrt(r), r = ceil(B k / L) "
                                                "= ceil({} x {} / {}) = {}, at most the atom's {}",
                                                batch, config.top_k, E, p.rows_per_expert, atom->max_tile_n)));
  plan_paired_rows(p, config, batch, options);
  p.groups = atom->groups;
  if (options.consumer_groups) {
    if (options.consumer_groups != atom->groups && atom->tiles == atom->groups)
      throw ConfigError("consumer_groups",
                        fmt::format("consumer_groups = {} is invalid for the {} atom: it runs {} warpgroup(s) of "
                                    "one tile each (0: as planned)",
                                    options.consumer_groups, atom->name, atom->groups));
    p.groups = options.consumer_groups;
    note(fmt::format("{} consumer warpgroup(s) (set by the options; the atom's: {})", p.groups, atom->groups));
  } else if (config.ranks > 1 && p.groups > 2) {
    // Expert parallelism's compute role holds its route spans beside the loops: at the 128 registers of three
    // consumer warpgroups they spill (tests/unit/test_ep.cpp), at the 168 of two they do not.
    p.groups = 2;
    note(fmt::format("expert parallelism: {} consumer warpgroups, not the atom's {} (its route spans' registers)",
                     p.groups, atom->groups));
  }
  plan_schedule(p, config, batch, device, options, *atom);
  p.pdl = config.ranks == 1 && batch <= atom->pdl_max_batch;
  if (p.pdl)
    note(
        fmt::format("pdl: the compute role's routing prologue and first weight copies run beside the dispatch role "
                    "(B <= {}, the {} atom's measured range)",
                    atom->pdl_max_batch, atom->name));
  p.tiles = p.schedule == Schedule::units ? contract::kUnitTiles
                                          : atom->tiles / atom->groups * p.groups;  // the atom's tiles per warpgroup
  // Items cover `tiles` 64-row tiles; a token tile's last item of a projection (2I or H rows) holds the rest,
  // one the compute role runs (contract::last_item_runs), else the items halve.
  const int H = padded_hidden(config), I = padded_intermediate(config);
  if (H != config.hidden || I != config.intermediate)
    note(fmt::format("H = {}, I = {} run as {} and {}: the kernels step 128 wide over zero padding", config.hidden,
                     config.intermediate, H, I));
  auto rest = [&p](int rows) { return contract::last_item_tiles(rows / 64, p.tiles); };
  auto rest_runs = [&](int rows) { return contract::last_item_runs(p.contract_path, p.groups, p.tiles, rest(rows)); };
  while (p.tiles > p.groups && !(rest_runs(2 * I) && rest_runs(H))) p.tiles /= 2;
  if (p.schedule == Schedule::units && p.tiles != contract::kUnitTiles)
    throw PlanError(fmt::format("{} B={}: the unit schedule needs items of {} tiles, and H = {} runs items of {}",
                                config.name, batch, contract::kUnitTiles, H, p.tiles));
  const int rest1 = rest(2 * I), rest2 = rest(H);
  note(fmt::format("items of {} rows: {} tiles of 64 over {} consumer warpgroup(s){}", 64 * p.tiles, p.tiles, p.groups,
                   rest1 == p.tiles && rest2 == p.tiles
                       ? std::string()
                       : fmt::format("; a token tile's last item has {} (GEMM1, {} rows) and {} (GEMM2, {} rows)",
                                     rest1, 2 * I, rest2, H)));
  if (config.shared_expert)
    note(
        fmt::format("fused shared expert: expert {} of the packed weights, reached by all {} tokens with weight 1; its "
                    "GEMM1 and GEMM2 items join the list after the routed experts', finalize adds its row",
                    E, batch));

  p.decoded_scales = options.decoded_scales;
  if (p.decoded_scales && p.contract_path != contract::kPathSm90Fp8)
    throw ConfigError("decoded_scales", fmt::format("decoded_scales = true is invalid for the {} atom: only the "
                                                    "sm90-fp8-wgmma atom reads UE8M0 scale words in its K-loop",
                                                    atom->name));
  p.subnormal_weight_scales = options.subnormal_weight_scales && p.contract_path == contract::kPathSm90Fp8;
  if (p.contract_path == contract::kPathSm90Fp8)
    note(p.subnormal_weight_scales
             ? "weight scales: the weights hold code-0 blocks with nonzero values, so the K-loop decodes code 0 as "
               "2^-127 (three integer operations a scale)"
             : "weight scales: code 0 reads as 0.0 (two integer operations a scale): exact for weights whose code-0 "
               "blocks are all zeros, which the layer checks when it packs them");
  if (p.decoded_scales)
    note(
        "decoded scales: a third non-consumer warp turns each stage's UE8M0 scale words into FP32 for the "
        "consumers (set by the options)");

  // Expert parallelism's decisions; a dispatch split leaves SMs out of the compute grid.
  p.ep = plan_ep(config, batch, device.sm_count, options, p.notes);
  const int compute_sms = device.sm_count - p.ep.dispatch_sms;

  // Compute: the deepest pipeline (up to 12 stages) that lets `ctas` CTAs share an SM. The CTAs per SM are chosen
  // with one activation warp, and the activation warps then fill what they leave free.
  int threads = contract::compute_threads(p.groups, p.decoded_scales, 1);
  auto smem_for = [&](int ctas, int stages) {
    return contract::compute_smem_layout(p.contract_path, p.groups, p.tiles, p.tile_n, stages, config.weight_experts(),
                                         ctas * compute_sms, p.decoded_scales)
        .total;
  };
  auto fits = [&](int ctas, int stages) {
    const int smem = smem_for(ctas, stages);
    return smem <= device.smem_per_block && ctas * (smem + k_reserved_smem_per_block) <= device.smem_per_sm &&
           ctas * threads <= device.max_threads_per_sm &&
           contract::compute_smem_valid(p.contract_path, p.groups, p.tiles, p.tile_n, stages, config.weight_experts());
  };
  int ctas = options.ctas_per_sm ? options.ctas_per_sm : atom->ctas_per_sm;
  if (ctas == 0) {  // from the SMEM budget: two CTAs if a 4-stage pipeline fits twice, else one
    ctas = fits(2, 4) ? 2 : 1;
    note(fmt::format("{} compute CTA(s) per SM: what a 4-stage pipeline of {} B allows in {} B", ctas, smem_for(2, 4),
                     device.smem_per_sm));
  } else {
    note(fmt::format("{} compute CTAs per SM ({})", ctas, options.ctas_per_sm ? "set by the options" : "the atom's"));
  }
  p.activation_warps = options.activation_warps ? options.activation_warps
                                                : contract::activation_warps(p.groups, p.decoded_scales, ctas);
  threads = contract::compute_threads(p.groups, p.decoded_scales, p.activation_warps);
  if (options.activation_warps && ctas * threads > device.max_threads_per_sm) {
    int most = 0;
    while (most < contract::kMaxActivationWarps &&
           ctas * contract::compute_threads(p.groups, p.decoded_scales, most + 1) <= device.max_threads_per_sm)
      ++most;
    throw ConfigError("activation_warps",
                      fmt::format("activation_warps = {} is invalid at {} compute CTA(s) per SM: "
                                  "{} CTA(s) of {} threads exceed the SM's {} (allowed: 1-{})",
                                  p.activation_warps, ctas, ctas, threads, device.max_threads_per_sm, most));
  }
  // The unit schedule's step owners (3 warpgroups on its 4-tile items: only the unit schedule plans those).
  const bool owners = contract::step_owners(p.groups, p.tiles);
  int stages = options.stages;
  if (stages == 0) {
    for (stages = k_max_stages; stages >= 2 && !fits(ctas, stages); --stages) {
    }
    if (stages < 2)
      throw PlanError(
          fmt::format("{} B={} on {}: no compute pipeline of 2+ stages fits {} CTA(s) per SM in {} B of SMEM",
                      config.name, batch, device.name, ctas, device.smem_per_sm));
    note(fmt::format("stages = {}: the deepest of [2, {}] whose {} B fit {} CTA(s) per SM", stages, k_max_stages,
                     smem_for(ctas, stages), ctas));
    if (owners && atom->owner_stages && stages > atom->owner_stages) {
      stages = atom->owner_stages;
      note(fmt::format("stages = {}: the {} atom's measured depth for the unit schedule's step owners", stages,
                       atom->name));
    }
    const bool pairs = p.schedule == Schedule::units && !owners;
    if (pairs && atom->pair_stages && stages > atom->pair_stages) {
      stages = atom->pair_stages;
      note(fmt::format("stages = {}: the {} atom's measured depth for the unit schedule on two warpgroups", stages,
                       atom->name));
    }
    for (const AtomTraits::SmallBatchRing& cap : atom->small_batch_rings) {
      if (owners || (pairs && atom->pair_stages) || batch > cap.max_batch) continue;
      if (stages > cap.stages) {
        stages = cap.stages;
        note(fmt::format("stages = {}: the {} atom's measured depth for B <= {}", stages, atom->name, cap.max_batch));
      }
      break;
    }
  } else if (owners && stages < 4) {
    // (Checked before the SMEM: such a ring fits, and "does not fit" would send the user the wrong way.)
    throw ConfigError("stages", fmt::format("stages = {} is invalid for the unit schedule's step owners (B = {} on {} "
                                            "consumer warpgroups): an owner holds a stage for a whole K128 step and "
                                            "waits for its next one, so the ring needs at least 4 (allowed: 4-{})",
                                            stages, batch, p.groups, k_max_stages));
  } else if (!fits(ctas, stages)) {
    throw PlanError(fmt::format("{} B={} on {}: {} stages ({} B each CTA) do not fit {} CTA(s) per SM", config.name,
                                batch, device.name, stages, smem_for(ctas, stages), ctas));
  }
  p.stages = stages;
  // The activation warps take turns on the ring only where its depth keeps their waits in phase (the kernel's
  // static_assert, on the same contract).
  const std::string ring = fmt::format("a ring of {} stages{}", stages, owners ? " with step owners" : "");
  const int scheduled = p.activation_warps;  // what the schedulers leave free (or the options set)
  if (!contract::activation_warps_fit(p.activation_warps, stages, owners)) {
    int most = p.activation_warps;
    while (!contract::activation_warps_fit(most, stages, owners)) --most;  // 1 always fits
    if (options.activation_warps)
      throw ConfigError("activation_warps",
                        fmt::format("activation_warps = {} is invalid on {}: warps taking turns there need at least "
                                    "{} stages, or a multiple of {} (allowed: 1-{})",
                                    p.activation_warps, ring, p.activation_warps + contract::release_lag(owners),
                                    p.activation_warps, most));
    p.activation_warps = most;
    threads = contract::compute_threads(p.groups, p.decoded_scales, p.activation_warps);
  }
  const int one_warp_cap =
      register_cap_for(device.regs_per_sm, contract::compute_threads(p.groups, p.decoded_scales, 1), ctas);
  const int cap = register_cap_for(device.regs_per_sm, threads, ctas);
  if (options.activation_warps)
    note(fmt::format("activation producer: {} warp(s) (set by the options){}", p.activation_warps,
                     cap < one_warp_cap ? fmt::format(": .maxnreg {}, against {} with one", cap, one_warp_cap) : ""));
  else if (p.activation_warps < scheduled)
    note(
        fmt::format("activation producer: {} warp(s), the most that take turns on {} (contract::activation_warps_fit; "
                    "the schedulers leave room for {})",
                    p.activation_warps, ring, scheduled));
  else if (p.activation_warps == 1)
    note(
        fmt::format("activation producer: 1 warp: a second per CTA would give a scheduler more warps than {} "
                    "CTA(s) of {} consumer warpgroup(s) do, and take registers",
                    ctas, p.groups));
  else
    note(
        fmt::format("activation producer: {} warps taking turns by K128 step: the {} beyond the first give no "
                    "scheduler more warps than {} CTA(s) of {} consumer warpgroup(s) do, so they take no registers; "
                    "one warp alone staged a step slower than B = 1's step owners consume it "
                    "(bench/results/2026-12-04-h200-activation-warps.md)",
                    p.activation_warps, p.activation_warps - 1, ctas, p.groups));
  p.compute = {true, ctas * compute_sms, threads, smem_for(ctas, stages), ctas, cap};
  note(fmt::format(
      "compute grid {} = {} CTA(s) x {} SMs, persistent; {} threads ({} consumer warpgroup(s) + 1 weight + {} "
      "activation{} warps), {} B SMEM, .maxnreg {}",
      p.compute.grid, ctas, compute_sms, threads, p.groups, p.activation_warps, p.decoded_scales ? " + 1 decoder" : "",
      p.compute.smem_bytes, p.compute.register_cap));

  // Dispatch: only when the compute role cannot read the caller's x as it is.
  const bool image = !contract::path_fp8_rows(p.contract_path);
  const bool split = contract::path_split_rows(p.contract_path);
  const bool padded = H != config.hidden;
  const std::string pad_note = padded ? fmt::format(", padding H = {} to {}", config.hidden, H) : "";
  // Expert parallelism: the other ranks read this rank's x rows and routes from its workspace, where only the
  // dispatch role puts them.
  const bool ep = config.ranks > 1;
  const std::string ep_note =
      ep ? fmt::format(", and publishes them with the routes to the other {} rank(s){}", config.ranks - 1,
                       p.ep.has(contract::kEpPull)     ? ", then pulls theirs"
                       : p.ep.has(contract::kEpMirror) ? ", mirroring routes, weights and scales into theirs"
                                                       : "")
         : "";
  // With a split, the dispatch role's CTAs fill its SMs only.
  const int dispatch_sms = p.ep.dispatch_sms ? p.ep.dispatch_sms : device.sm_count;
  if (config.recipe == Recipe::w4a16 && !padded && !ep) {
    note("dispatch: not launched (W4A16: the compute role reads the caller's BF16 x and routes by itself)");
  } else if (config.recipe == Recipe::w4a16) {
    p.dispatch = {
        true,
        std::min(ceil_div(std::int64_t{batch} * H / 8, k_dispatch_threads), k_streaming_ctas_per_sm * dispatch_sms),
        k_dispatch_threads,
        0,
        1,
        0};
    note(fmt::format("dispatch: copies the BF16 x{}{} ({} threads x {} CTAs)", pad_note, ep_note, k_dispatch_threads,
                     p.dispatch.grid));
  } else if (options.input_bf16 || image || split || padded || ep) {
    const std::int64_t work = std::int64_t{batch} * H / (image ? 16 : 32);
    p.dispatch = {true,
                  std::min(ceil_div(work, k_dispatch_threads), k_streaming_ctas_per_sm * dispatch_sms),
                  k_dispatch_threads,
                  0,
                  1,
                  0};
    const char* what = options.input_bf16 ? "quantizes the BF16 x to MXFP8"
                       : image            ? "writes the BF16 image of x"
                       : split            ? "splits the MXFP8 x"
                                          : "copies the MXFP8 x";
    note(fmt::format("dispatch: {}{}{}{} ({} threads x {} CTAs)", what,
                     split ? " into its large and small elements (exact FP8 sums of GEMM1's large products)" : "",
                     pad_note, ep_note, k_dispatch_threads, p.dispatch.grid));
  } else {
    note("dispatch: not launched (the compute role reads the caller's MXFP8 x and routes by itself)");
  }
  if (p.schedule == Schedule::units) {
    // A block per 128 columns of a token's y, a warp per route: each lane adds I/128 partial rows of 4 columns.
    p.finalize = {true,
                  static_cast<int>(batch * ceil_div(config.hidden, 128)),
                  32 * (config.top_k + (config.shared_expert ? 1 : 0)),
                  0,
                  1,
                  0};
    note(
        fmt::format("finalize: {} blocks (128 columns of a token's y) x {} threads (a warp per route adds its {} "
                    "partial rows)",
                    p.finalize.grid, p.finalize.threads, I / 128));
  } else {
    p.finalize = {true,
                  std::min(ceil_div(std::int64_t{batch} * config.hidden / 8, k_finalize_threads),
                           k_streaming_ctas_per_sm * device.sm_count),
                  k_finalize_threads,
                  0,
                  1,
                  0};
  }
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
       {"ep", {{"mode", p.ep.mode}, {"modes", ep_mode_names(p.ep.mode)}, {"dispatch_sms", p.ep.dispatch_sms}}},
       {"dispatch", p.dispatch},
       {"compute", p.compute},
       {"finalize", p.finalize},
       {"workspace_bytes", p.workspace_bytes},
       {"notes", p.notes}};
}

}  // namespace moejit::codegen
