// The compute role's items, weight-scale decoding and grid, decided per B for plan_launch (moe_launch_plan.cpp):
// plan_items and plan_weight_scales after the schedule (plan_schedule.cpp), plan_compute after expert
// parallelism's plan (ep_plan.cpp).
#include <fmt/format.h>

#include <algorithm>

#include "codegen/plan_steps.hpp"
#include "codegen/planner.hpp"
#include "templates/moe_contract.cuh"

namespace moejit::codegen {
namespace {
constexpr int k_max_stages = 12;
// What the driver keeps per resident block on sm_90 and sm_120 (cudaDevAttrReservedSharedMemoryPerBlock).
constexpr int k_reserved_smem_per_block = 1024;

// The register cap that lets `ctas` blocks of `threads` be resident: the
// register file is four sub-partitions of regs_per_sm / 4, each holding a
// quarter of the warps (rounded up), so the cap is what the fullest one allows,
// a multiple of 8 (the per-thread allocation granularity), 255 at most.
int register_cap_for(int regs_per_sm, int threads, int ctas) {
  return std::min(255, regs_per_sm / 4 / (32 * contract::scheduler_warps(ctas, threads)) / 8 * 8);
}
}  // namespace

void plan_items(MoeLaunchPlan& p, const MoeConfig& config, int batch, const AtomTraits& atom) {
  auto note = [&p](std::string s) { p.notes.push_back(std::move(s)); };
  const int E = config.local_experts();
  p.tiles = p.schedule == Schedule::units ? contract::kUnitTiles
                                          : atom.tiles / atom.groups * p.groups;  // the atom's tiles per warpgroup
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
}

void plan_weight_scales(MoeLaunchPlan& p, const MoeConfig& config, int batch, const MoeCodegenOptions& options,
                        const AtomTraits& atom) {
  auto note = [&p](std::string s) { p.notes.push_back(std::move(s)); };
  p.decoded_scales = options.decoded_scales;
  if (p.decoded_scales && p.contract_path != contract::kPathSm90Fp8)
    throw ConfigError("decoded_scales", fmt::format("decoded_scales = true is invalid for the {} atom: only the "
                                                    "sm90-fp8-wgmma atom reads UE8M0 scale words in its K-loop",
                                                    atom.name));
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
  plan_token_frame(p, config, batch, options, atom);
}

// The token frame: where the dispatch role stages split rows for the fast atom on one GPU, for weights whose
// scale codes keep its FP32 sums finite (contract::kFrameMaxWeightScaleCode), from the atom's measured
// token_frame_min_batch.
void plan_token_frame(MoeLaunchPlan& p, const MoeConfig& config, int batch, const MoeCodegenOptions& options,
                      const AtomTraits& atom) {
  auto note = [&p](std::string s) { p.notes.push_back(std::move(s)); };
  const char* why_not = p.contract_path != contract::kPathSm90Fp8 ? "the atom stages no split rows"
                        : config.ranks != 1                       ? "expert parallelism stages rows per MX block"
                        : options.subnormal_weight_scales         ? "the weights hold nonzero blocks of scale code 0"
                        : options.wide_weight_scales
                            ? "the weights hold a scale code above contract::kFrameMaxWeightScaleCode"
                            : nullptr;
  if (options.token_frame == true && why_not)
    throw ConfigError("token_frame",
                      fmt::format("token_frame = on is invalid here: {} (allowed: off, or as planned)", why_not));
  const bool planned = atom.token_frame_min_batch > 0 && batch >= atom.token_frame_min_batch;
  p.token_frame = !why_not && (options.token_frame == true || (planned && options.token_frame != false));
  if (p.contract_path != contract::kPathSm90Fp8) return;
  if (p.token_frame)
    note(fmt::format(
        "activation frame: token ({}): GEMM1's rows in one scale frame per token, each block's codes shifted to "
        "the token's largest scale code, so the GEMM1 promotion multiplies by the weight scale alone (two FP32 "
        "operations a value, not three); the GEMM1 epilogue multiplies the frame in",
        options.token_frame ? std::string("set by the options")
                            : fmt::format("B >= {}, the {} atom's measured range; --token-frame off keeps the MX "
                                          "blocks",
                                          atom.token_frame_min_batch, atom.name)));
  else
    note(fmt::format("activation frame: MX block ({})", why_not ? std::string(why_not)
                                                        : options.token_frame == false
                                                            ? std::string("token_frame = off set by the options")
                                                            : fmt::format("B < {}, where the token frame measured no "
                                                                          "faster; --token-frame on sets it",
                                                                          atom.token_frame_min_batch)));
}

void plan_compute(MoeLaunchPlan& p, const MoeConfig& config, int batch, const DeviceProfile& device,
                  const MoeCodegenOptions& options, const AtomTraits& atom) {
  auto note = [&p](std::string s) { p.notes.push_back(std::move(s)); };
  // A dispatch split (expert parallelism) leaves SMs out of the compute grid.
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
  int ctas = options.ctas_per_sm ? options.ctas_per_sm : atom.ctas_per_sm;
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
    if (stages < 2 && options.ctas_per_sm) {  // the caller's CTAs per SM: name the option, and what fits
      int most = ctas - 1;
      while (most > 1 && !fits(most, 2)) --most;
      throw ConfigError("ctas_per_sm", fmt::format("ctas_per_sm = {} is invalid for {} B={} on {}: no compute "
                                                   "pipeline of 2+ stages fits {} CTA(s) per SM in {} B of SMEM "
                                                   "(allowed: 1-{})",
                                                   ctas, config.name, batch, device.name, ctas, device.smem_per_sm,
                                                   std::max(most, 1)));
    }
    if (stages < 2)
      throw PlanError(
          fmt::format("{} B={} on {}: no compute pipeline of 2+ stages fits {} CTA(s) per SM in {} B of SMEM",
                      config.name, batch, device.name, ctas, device.smem_per_sm));
    note(fmt::format("stages = {}: the deepest of [2, {}] whose {} B fit {} CTA(s) per SM", stages, k_max_stages,
                     smem_for(ctas, stages), ctas));
    if (owners && atom.owner_stages && stages > atom.owner_stages) {
      stages = atom.owner_stages;
      note(fmt::format("stages = {}: the {} atom's measured depth for the unit schedule's step owners", stages,
                       atom.name));
    }
    const bool pairs = p.schedule == Schedule::units && !owners;
    if (pairs && atom.pair_stages && stages > atom.pair_stages) {
      stages = atom.pair_stages;
      note(fmt::format("stages = {}: the {} atom's measured depth for the unit schedule on two warpgroups", stages,
                       atom.name));
    }
    for (const AtomTraits::SmallBatchRing& cap : atom.small_batch_rings) {
      if (owners || (pairs && atom.pair_stages) || batch > cap.max_batch) continue;
      if (stages > cap.stages) {
        stages = cap.stages;
        note(fmt::format("stages = {}: the {} atom's measured depth for B <= {}", stages, atom.name, cap.max_batch));
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
    int most = stages - 1;
    while (most >= 2 && !fits(ctas, most)) --most;
    throw ConfigError("stages", fmt::format("stages = {} is invalid for {} B={} on {}: {} B each CTA do not fit {} "
                                            "CTA(s) per SM ({})",
                                            stages, config.name, batch, device.name, smem_for(ctas, stages), ctas,
                                            most >= 2 ? fmt::format("allowed: 2-{}", most)
                                                      : std::string("no depth fits: lower ctas_per_sm")));
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
}

}  // namespace moejit::codegen
