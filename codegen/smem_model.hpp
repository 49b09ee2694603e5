#pragma once
// The role-2 shared-memory model of the seed paper, eq. (9)-(12). It is the
// budget that drives co-residency (eq. 4) and the figure the kernel checks
// its allocator's footprint against at run time, so every term is kept.

#include <optional>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

namespace moejit::codegen {

// Where the L1 (FC1) tile is handed from the math warps to the utility warp.
enum class HandoffKind {
  smem,           // in the SMEM return staging (tile_n = 16)
  global,         // through a global handoff arena (tile_n = 32)
  shared_chunks,  // global handoff whose source tiles are shared 32-row chunks (tile_n >= 48)
};
std::string_view handoff_name(HandoffKind h);  // "smem", "global", "global+shared-chunks"
std::optional<HandoffKind> parse_handoff(std::string_view text);

struct SmemInputs {
  int tile_n = 16;
  int stages = 2;                // s_st
  bool compact_weights = false;  // c_w of eq. (11)
  int activation_bytes = 1;      // bytes per staged activation element: 1 (FP8, sm_120a) or 2 (BF16, sm_90a)
  HandoffKind handoff = HandoffKind::smem;
  int handoff_slots = 1;   // s
  int shared_tile_ns = 0;  // 0: no shared expert fused
  bool relay = false;      // resident relay copiers (their two 16 KiB slots)
};

// Every term in bytes; the names follow the paper.
struct SmemModel {
  int stage_weight_bytes = 0;      // P_W = 64 * 128 / 2^c_w + 512
  int stage_activation_bytes = 0;  // P_X = tile_n * 128 * activation_bytes + 512
  int pipeline_bytes = 0;          // s_st * (P_W + P_X)
  int token_bytes = 0;             // tile_n * 16 + 16: per-token route words of the tile
  int barrier_bytes = 0;           // B_bar
  int return_bytes = 0;            // B_ret
  int util_bytes = 0;              // B_util = 32 + 24 s + 16 s tile_n
  int control_bytes = 0;           // the final 512 of eq. (10)
  int model_bytes = 0;             // S_model, eq. (10)
  int shared_tile_ns = 0;          // eq. (12)'s tile_ns, 0 without a shared expert
  int shared_bytes = 0;            // S_shared, eq. (12)
  int shared_term = 0;             // 2 S_shared + 16 (two mbarriers), 0 without a shared expert
  int relay_term = 0;              // 2 (16 KiB + 8), 0 without relay copiers
  int role2_bytes = 0;             // S_role2 = max of the three, eq. (9)

  friend bool operator==(const SmemModel&, const SmemModel&) = default;
};

// B_bar is not sized in the paper. moejit counts what §4.8 describes: the
// producer owns separate W and X barrier sets, each with a full and an empty
// mbarrier (8 bytes) per stage, so B_bar = 4 * 8 * s_st.
//
// The shared-expert and copier terms of eq. (9) only exist in the variants that
// run those phases (§4.4: "the fused and relaying variants add at most the
// largest of three footprints"); a plain routed CTA allocates S_model.
SmemModel role2_smem_model(const SmemInputs& in);

// eq. (12)'s tile_ns: the smallest of {8, 16, 32, 64} that holds the batch's
// tokens, 64 beyond that (several token tiles).
int shared_tile_ns(int batch);

void to_json(nlohmann::json& j, const SmemModel& m);
void from_json(const nlohmann::json& j, SmemModel& m);

}  // namespace moejit::codegen
