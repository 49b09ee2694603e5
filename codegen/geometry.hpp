#pragma once
// Geometry: every decision the planner makes for one launch shape (seed paper
// §4.4, with §4.2's partition and §4.5's dispatch knobs), plus the reasons,
// so that `moejit plan` can explain itself. It is what specialize() turns
// into KernelSpecs and what the runtime sizes the workspace and launches by.

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "codegen/occupancy.hpp"
#include "codegen/smem_model.hpp"

namespace moejit::codegen {

// One role kernel's launch: grid, block and dynamic SMEM, and the residency
// it was planned for (blocks_per_sm CTAs on each of `sms` SMs, eq. 6).
struct RoleLaunch {
  int grid = 0;
  int threads = 0;
  int smem_bytes = 0;
  int blocks_per_sm = 0;
  int sms = 0;

  friend bool operator==(const RoleLaunch&, const RoleLaunch&) = default;
};

struct Geometry {
  // The shape planned.
  std::string model;
  std::string device;
  std::string target;     // "sm_120a"
  int batch = 0;          // B
  int ranks = 0;          // R
  int local_experts = 0;  // L = E / R
  int top_k = 0;          // k
  bool shared_expert = false;

  // Token tile (eq. 1, eq. 8).
  int rows_per_expert = 0;   // r = ceil(B k / L)
  int tile_n = 0;            // N extent of the token tile
  int tiles_per_expert = 0;  // ceil(r / tile_n): > 1 only on the tile_n = 64 fallback for r >= 96
  // Mainloop.
  int stages = 0;  // s_st
  bool compact_weights = false;
  HandoffKind handoff = HandoffKind::smem;
  int handoff_slots = 0;  // s
  // Return staging (§4.4) and dispatch (§4.5).
  bool batched_returns = false;
  bool mirrored_metadata = false;
  bool relay_staging = false;  // resident relay copiers
  bool pull_cache = false;
  int pull_batch_depth = 0;            // peer rows in flight per pulling warp
  bool direct_scan = false;            // tiny-batch path (B <= 2)
  bool bulk_pull_engine = false;       // cp.async.bulk pull engine (else the register-batched fallback)
  std::int64_t relay_arena_bytes = 0;  // R Bcap k 2H when relaying, else 0
  std::int64_t pull_cache_bytes = 0;   // 8 R Bcap when the pull cache is on, else 0

  // Occupancy (eq. 4) and reservations.
  int l2_dedicated = 0;  // l: compute CTAs reserved for return traffic
  int co_residency = 0;  // c
  int register_cap = 0;  // Rcap, 0 = no cap
  // Bytes of mainloop loads one SM has in flight while it consumes a stage:
  // c (s_st - 1) (P_W + P_X). What the sm_90a depth rule is for (arch_rules.hpp).
  int loads_in_flight_per_sm = 0;
  SmemModel smem;      // role 2, eq. (9)-(12)
  int role1_smem = 0;  // S_role1

  // Partition (eq. 5) and the role launches. The relay copiers are the first
  // relay.grid blocks of the compute grid (eq. 13), not a kernel of their own.
  Partition partition;
  RoleLaunch dispatch;  // role 1, dispatch context
  RoleLaunch compute;   // role 2, compute context
  RoleLaunch relay;     // the copier blocks of role 2
  RoleLaunch finalize;  // role 3, compute context

  // The decisions in the order taken, each with its reason.
  std::vector<std::string> notes;

  friend bool operator==(const Geometry&, const Geometry&) = default;
};

void to_json(nlohmann::json& j, const RoleLaunch& r);
void from_json(const nlohmann::json& j, RoleLaunch& r);
void to_json(nlohmann::json& j, const Geometry& g);
void from_json(const nlohmann::json& j, Geometry& g);

}  // namespace moejit::codegen
