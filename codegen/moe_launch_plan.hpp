#pragma once
// The launch plan of one forward shape: what the three role kernels are
// specialized on and exactly how they launch (grid, threads, SMEM, register
// cap, CTAs per SM). It is computed from the kernels' own contract
// (templates/moe_contract.cuh), the atom table and the device profile; the
// runtime launches it as it is and `moejit plan` prints it. The paper's §4.4
// chain (planner.hpp, Geometry) stays the sm_120a/EP rule set beside it.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "codegen/device_profile.hpp"
#include "codegen/moe_atoms.hpp"
#include "codegen/moe_config.hpp"
#include "templates/moe_contract.cuh"

namespace moejit::codegen {

// The compute role's schedule (contract::kScheduleStream / kScheduleUnits /
// kScheduleItems): stream splits each phase's K128 steps evenly over the
// CTAs, and a GEMM2 step waits for the GEMM1 tiles it reads, run by whichever
// CTAs; units gives each CTA whole (expert, K128 block of I) units, GEMM1
// rows and the GEMM2 K block they feed, so no CTA waits for another, and
// finalize adds the units' FP32 partial rows (small B, the sm90-fp8-wgmma
// atom, one GPU); items deals whole items round-robin, GEMM1's then GEMM2's,
// none cut (small B, sm_90a's exact path, one GPU).
enum class Schedule { stream, units, items };
std::string_view schedule_name(Schedule s);  // "stream", "units", "items"
std::optional<Schedule> parse_schedule(std::string_view text);

// Everything besides the config, B and the device that changes the emitted
// kernels: a layer's options and the CLI's flags map onto this.
struct MoeCodegenOptions {
  std::optional<ComputePath> path;  // unset: the target's default_path (a plan holds the resolved one)
  bool input_bf16 = false;          // x arrives as BF16 and the dispatch role quantizes it
  // Tuning overrides (0: as planned).
  int tile_n = 0;       // 8, 16, 32 or 64
  int stages = 0;       // 2..16
  int ctas_per_sm = 0;  // 1..8
  // Consumer warpgroups of the compute CTA, each on the atom's tiles per warpgroup (1..3; the atoms of one
  // tile a warpgroup run their own count only). An A/B knob: the planner's choice is the atom's, two with
  // expert parallelism; with the unit schedule 2 or 3 (step owners, contract::step_owners).
  int consumer_groups = 0;
  std::optional<Schedule> schedule;  // unset: as planned
  // GEMM1's split rows paired (MoeLaunchPlan::paired_rows) in the segments of at most contract::kPairedRows rows:
  // on (where the path splits rows, on one GPU), off, or unset: as planned. An A/B knob.
  std::optional<bool> paired_rows;
  // The activation producer's warps (1..contract::kMaxActivationWarps; 0: as planned, contract::activation_warps:
  // one plus those the CTA's warps leave free on the schedulers, which cost no registers). An A/B knob.
  int activation_warps = 0;
  // A decoder warp turns each stage's UE8M0 scale words into FP32 for the consumers (the sm90-fp8-wgmma
  // atom only; contract::compute_threads). Off by default: it gives the default's bits but runs 2-6 points of
  // the floor slower on the H200 (bench/results/2026-12-02-h200-decoded-and-ring-depth.md).
  bool decoded_scales = false;
  // The weights hold K32 blocks of UE8M0 scale code 0 (2^-127, an FP32 subnormal) with a nonzero value. The
  // fast path's K-loop then decodes a weight scale in three integer operations, else in two, reading code 0 as
  // 0.0: exact, as every value such a scale multiplies is zero. A layer sets it from its weights
  // (the transform kernel, or pack_weights); off, the kernels are those of a checkpoint without such blocks.
  bool subnormal_weight_scales = false;
  // The weights hold a UE8M0 scale code above contract::kFrameMaxWeightScaleCode, whose products the token
  // frame's FP32 sums could overflow (MoeLaunchPlan::token_frame). A layer sets it from its weights' largest
  // code (the transform kernel, or pack_weights' top_scale_code).
  bool wide_weight_scales = false;
  // GEMM1's rows in one scale frame per token (MoeLaunchPlan::token_frame): on, off, or unset: as planned.
  // An A/B knob.
  std::optional<bool> token_frame;
  // The compute CTA's routing tables by one warp (MoeLaunchPlan::warp_tables): on (steps of at most 32 schedule
  // routes on one GPU), off (the block's), or unset: as planned. An A/B knob.
  std::optional<bool> warp_tables;
  // Expert parallelism (R > 1), overriding the plan (unset: as planned): the contract::EpMode bits, and the
  // SMs left to the dispatch role (MOEJIT_DISPATCH_SMS sets it when unset here; 0: it shares the compute's).
  std::optional<int> ep_mode;
  std::optional<int> dispatch_sms;

  friend bool operator==(const MoeCodegenOptions&, const MoeCodegenOptions&) = default;
};

// Range checks; throws ConfigError naming the field, its value and the range.
void validate(const MoeCodegenOptions& options);

struct RolePlan {
  bool launched = false;
  int grid = 0;
  int threads = 0;
  int smem_bytes = 0;     // dynamic
  int blocks_per_sm = 0;  // the residency it is planned for (the runtime checks the driver agrees)
  int register_cap = 0;   // .maxnreg (0: none)

  friend bool operator==(const RolePlan&, const RolePlan&) = default;
};

// Expert parallelism's decisions for R > 1 (GC-MoE Table 2, as this target runs them; docs/expert-parallelism.md):
// the contract::EpMode bits all three role kernels are specialized on, and the SMs kept out of the compute grid
// for the dispatch role. All zero with one rank.
struct EpPlan {
  int mode = 0;          // contract::EpMode bits
  int dispatch_sms = 0;  // 0: the dispatch role runs on the compute role's SMs, ahead of it

  bool has(int bit) const { return (mode & bit) != 0; }
  friend bool operator==(const EpPlan&, const EpPlan&) = default;
};

struct MoeLaunchPlan {
  std::string model, device, target;
  int batch = 0;
  MoeCodegenOptions options;
  std::string atom;         // AtomTraits::name
  int contract_path = 0;    // contract::MmaPath
  int rows_per_expert = 0;  // r = ceil(B k / L)
  int groups = 0;           // consumer warpgroups per compute CTA
  int tiles = 0;            // 64-row weight tiles per item (tiles / groups per warpgroup)
  int tile_n = 0;           // widest token tile of an item (wgmma N); an item uses the smallest of 8/16/32/64 that fits
  int stages = 0;
  // GEMM1's split rows paired (contract::kPairedRows): each token's large and small rows in one 8-column tile,
  // in every GEMM1 segment (B <= kPairedRows on 8-column token tiles) or in those of at most kPairedRows rows.
  bool paired_rows = false;
  Schedule schedule = Schedule::stream;
  // Programmatic dependent launch between the roles (the runtime's default; MoeLayerOptions::pdl overrides).
  bool pdl = false;
  bool decoded_scales = false;  // the compute CTA's scale decoder warp (MoeCodegenOptions::decoded_scales)
  int activation_warps = 1;     // the compute CTA's activation producer warps (contract::activation_warps)
  // The fast atom's K-loop decodes weight scale code 0 as 2^-127 (MoeCodegenOptions::subnormal_weight_scales);
  // false on the other atoms, which do not read the codes in their loops this way.
  bool subnormal_weight_scales = false;
  // GEMM1's rows in one scale frame per token (contract::kFrameMaxWeightScaleCode, docs/numerics.md): the
  // dispatch role shifts each block's E4M3 codes to the token's largest scale, the fast atom's GEMM1 promotion
  // drops the activation scale (two FP32 operations a value, not three), and the GEMM1 epilogue multiplies the
  // frame in.
  bool token_frame = false;
  // The compute CTA's routing tables by one warp (route_tables_warp: a lane a route, no block barrier but one), for
  // the steps of at most 32 schedule routes (B k, plus one with the fused shared expert) on one GPU; else by the
  // whole block. The kernel holds only the planned one.
  bool warp_tables = false;
  EpPlan ep;
  RolePlan dispatch, compute, finalize;
  std::int64_t workspace_bytes = 0;  // per stream
  std::vector<std::string> notes;    // each decision with its reason

  friend bool operator==(const MoeLaunchPlan&, const MoeLaunchPlan&) = default;
};

// MoeLayerOptions::pdl over the planned MoeLaunchPlan::pdl (unset: as planned), its note replaced by one saying
// so: a launch choice, the kernels are the same either way.
void override_pdl(MoeLaunchPlan& plan, std::optional<bool> pdl);

// The kernels' H and I: the model's, padded with zero weights and
// activations to the 128-wide steps (H that is not a multiple of 128 to 256:
// see padded_hidden); and the workspace dimensions they make.
int padded_hidden(const MoeConfig& config);
int padded_intermediate(const MoeConfig& config);
// `ep`: the plan's EpMode bits (those that shape the workspace count: contract::kEpLayoutModes).
contract::MoeDims workspace_dims(const MoeConfig& config, int contract_path, int ep = 0);

// The EP decisions of plan_launch (ep_plan.cpp), `notes` receiving each with its reason. Throws ConfigError for
// an override that cannot apply (field "ep_mode" or "dispatch_sms"; MOEJIT_DISPATCH_SMS when it set the split).
EpPlan plan_ep(const MoeConfig& config, int batch, int sm_count, const MoeCodegenOptions& options,
               std::vector<std::string>& notes);
std::string ep_mode_names(int mode);  // "pull+staged-returns", "none"
// The inverse: "none" or a +-joined list of mirror, pull, staged-returns, direct-scan; nullopt otherwise.
std::optional<int> parse_ep_mode(std::string_view text);

// eq. (1) with a Poisson margin: the token tile covers r + 3 sqrt(r) rows, so an
// expert's routes rarely need a second tile (which would stream its weights twice).
int compute_tile_n(int rows_per_expert);

// Throws ConfigError for invalid input and PlanError (planner.hpp) for a shape
// the device cannot run (no atom for the target and path, SMEM too small).
MoeLaunchPlan plan_launch(const MoeConfig& config, int batch, const DeviceProfile& device,
                          const MoeCodegenOptions& options = {});

void to_json(nlohmann::json& j, const RolePlan& r);
void to_json(nlohmann::json& j, const MoeLaunchPlan& p);

}  // namespace moejit::codegen
