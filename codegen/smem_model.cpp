#include "codegen/smem_model.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>

namespace moejit::codegen {
namespace {
constexpr int k_weight_tile_rows = 64;  // M = 64 weight rows (swap-AB, §4.3)
constexpr int k_k_block = 128;          // K = 128 per stage
constexpr int k_scale_block = 512;      // per-stage scale block: 128 * K128 / 32
constexpr int k_mbarrier = 8;
constexpr int k_barriers_per_stage = 4;  // fullW, emptyW, fullX, emptyX
constexpr int k_chunk_rows = 32;         // shared 32-row handoff chunks
constexpr int k_copier_slot = 16 * 1024;

int round_up(int v, int m) {
  return (v + m - 1) / m * m;
}

struct Field {
  const char* key;
  int SmemModel::*member;
};
constexpr Field k_fields[] = {
    {"stage_weight_bytes", &SmemModel::stage_weight_bytes},
    {"stage_activation_bytes", &SmemModel::stage_activation_bytes},
    {"pipeline_bytes", &SmemModel::pipeline_bytes},
    {"token_bytes", &SmemModel::token_bytes},
    {"barrier_bytes", &SmemModel::barrier_bytes},
    {"return_bytes", &SmemModel::return_bytes},
    {"util_bytes", &SmemModel::util_bytes},
    {"control_bytes", &SmemModel::control_bytes},
    {"model_bytes", &SmemModel::model_bytes},
    {"shared_tile_ns", &SmemModel::shared_tile_ns},
    {"shared_bytes", &SmemModel::shared_bytes},
    {"shared_term", &SmemModel::shared_term},
    {"relay_term", &SmemModel::relay_term},
    {"role2_bytes", &SmemModel::role2_bytes},
};
}  // namespace

std::string_view handoff_name(HandoffKind h) {
  switch (h) {
    case HandoffKind::smem: return "smem";
    case HandoffKind::global: return "global";
    case HandoffKind::shared_chunks: return "global+shared-chunks";
  }
  return "?";
}

std::optional<HandoffKind> parse_handoff(std::string_view text) {
  for (HandoffKind h : {HandoffKind::smem, HandoffKind::global, HandoffKind::shared_chunks})
    if (handoff_name(h) == text) return h;
  return std::nullopt;
}

SmemModel role2_smem_model(const SmemInputs& in) {
  SmemModel m;
  const int n = in.tile_n, s = in.handoff_slots;
  // eq. (11): the compact path stages raw nibbles, half the expanded tile.
  m.stage_weight_bytes = k_weight_tile_rows * k_k_block / (in.compact_weights ? 2 : 1) + k_scale_block;
  m.stage_activation_bytes = n * k_k_block * in.activation_bytes + k_scale_block;
  m.pipeline_bytes = in.stages * (m.stage_weight_bytes + m.stage_activation_bytes);
  m.token_bytes = n * 16 + 16;
  m.barrier_bytes = k_barriers_per_stage * k_mbarrier * in.stages;
  switch (in.handoff) {
    case HandoffKind::smem: m.return_bytes = n * (20 + 128 * s); break;
    case HandoffKind::global: m.return_bytes = 20 * n + 16; break;
    case HandoffKind::shared_chunks: m.return_bytes = 20 * n + 128 * k_chunk_rows * s; break;
  }
  m.util_bytes = 32 + 24 * s + 16 * s * n;
  m.control_bytes = 512;
  m.model_bytes =
      m.pipeline_bytes + m.token_bytes + m.barrier_bytes + m.return_bytes + m.util_bytes + m.control_bytes;  // eq. (10)
  if (in.shared_tile_ns > 0) {
    // eq. (12): one 8 KiB weight tile, one scale block and tile_ns padded
    // token rows of 128 activation bytes + 4 scale bytes, rounded to 1 KiB.
    m.shared_tile_ns = in.shared_tile_ns;
    m.shared_bytes = round_up(k_weight_tile_rows * k_k_block + k_scale_block + 132 * in.shared_tile_ns, 1024);
    m.shared_term = 2 * m.shared_bytes + 2 * k_mbarrier;
  }
  if (in.relay) m.relay_term = 2 * (k_copier_slot + k_mbarrier);
  m.role2_bytes = std::max({m.model_bytes, m.shared_term, m.relay_term});  // eq. (9)
  return m;
}

int shared_tile_ns(int batch) {
  for (int t : {8, 16, 32})
    if (batch <= t) return t;
  return 64;
}

void to_json(nlohmann::json& j, const SmemModel& m) {
  j = nlohmann::json::object();
  for (const Field& f : k_fields) j[f.key] = m.*(f.member);
}

void from_json(const nlohmann::json& j, SmemModel& m) {
  for (const Field& f : k_fields) m.*(f.member) = j.at(f.key).get<int>();
}

}  // namespace moejit::codegen
