#include "codegen/geometry.hpp"

#include <nlohmann/json.hpp>
#include <stdexcept>

namespace moejit::codegen {

void to_json(nlohmann::json& j, const RoleLaunch& r) {
  j = {{"grid", r.grid},
       {"threads", r.threads},
       {"smem_bytes", r.smem_bytes},
       {"blocks_per_sm", r.blocks_per_sm},
       {"sms", r.sms}};
}

void from_json(const nlohmann::json& j, RoleLaunch& r) {
  r.grid = j.at("grid").get<int>();
  r.threads = j.at("threads").get<int>();
  r.smem_bytes = j.at("smem_bytes").get<int>();
  r.blocks_per_sm = j.at("blocks_per_sm").get<int>();
  r.sms = j.at("sms").get<int>();
}

void to_json(nlohmann::json& j, const Geometry& g) {
  j = {{"model", g.model},
       {"device", g.device},
       {"target", g.target},
       {"batch", g.batch},
       {"ranks", g.ranks},
       {"local_experts", g.local_experts},
       {"top_k", g.top_k},
       {"shared_expert", g.shared_expert},
       {"rows_per_expert", g.rows_per_expert},
       {"tile_n", g.tile_n},
       {"tiles_per_expert", g.tiles_per_expert},
       {"stages", g.stages},
       {"compact_weights", g.compact_weights},
       {"handoff", handoff_name(g.handoff)},
       {"handoff_slots", g.handoff_slots},
       {"batched_returns", g.batched_returns},
       {"mirrored_metadata", g.mirrored_metadata},
       {"relay_staging", g.relay_staging},
       {"pull_cache", g.pull_cache},
       {"pull_batch_depth", g.pull_batch_depth},
       {"direct_scan", g.direct_scan},
       {"bulk_pull_engine", g.bulk_pull_engine},
       {"relay_arena_bytes", g.relay_arena_bytes},
       {"pull_cache_bytes", g.pull_cache_bytes},
       {"l2_dedicated", g.l2_dedicated},
       {"co_residency", g.co_residency},
       {"register_cap", g.register_cap},
       {"loads_in_flight_per_sm", g.loads_in_flight_per_sm},
       {"smem", g.smem},
       {"role1_smem", g.role1_smem},
       {"partition", g.partition},
       {"dispatch", g.dispatch},
       {"compute", g.compute},
       {"relay", g.relay},
       {"finalize", g.finalize},
       {"notes", g.notes}};
}

void from_json(const nlohmann::json& j, Geometry& g) {
  g.model = j.at("model").get<std::string>();
  g.device = j.at("device").get<std::string>();
  g.target = j.at("target").get<std::string>();
  g.batch = j.at("batch").get<int>();
  g.ranks = j.at("ranks").get<int>();
  g.local_experts = j.at("local_experts").get<int>();
  g.top_k = j.at("top_k").get<int>();
  g.shared_expert = j.at("shared_expert").get<bool>();
  g.rows_per_expert = j.at("rows_per_expert").get<int>();
  g.tile_n = j.at("tile_n").get<int>();
  g.tiles_per_expert = j.at("tiles_per_expert").get<int>();
  g.stages = j.at("stages").get<int>();
  g.compact_weights = j.at("compact_weights").get<bool>();
  const auto handoff = parse_handoff(j.at("handoff").get<std::string>());
  if (!handoff) throw std::invalid_argument("geometry: unknown handoff " + j.at("handoff").dump());
  g.handoff = *handoff;
  g.handoff_slots = j.at("handoff_slots").get<int>();
  g.batched_returns = j.at("batched_returns").get<bool>();
  g.mirrored_metadata = j.at("mirrored_metadata").get<bool>();
  g.relay_staging = j.at("relay_staging").get<bool>();
  g.pull_cache = j.at("pull_cache").get<bool>();
  g.pull_batch_depth = j.at("pull_batch_depth").get<int>();
  g.direct_scan = j.at("direct_scan").get<bool>();
  g.bulk_pull_engine = j.at("bulk_pull_engine").get<bool>();
  g.relay_arena_bytes = j.at("relay_arena_bytes").get<std::int64_t>();
  g.pull_cache_bytes = j.at("pull_cache_bytes").get<std::int64_t>();
  g.l2_dedicated = j.at("l2_dedicated").get<int>();
  g.co_residency = j.at("co_residency").get<int>();
  g.register_cap = j.at("register_cap").get<int>();
  g.loads_in_flight_per_sm = j.at("loads_in_flight_per_sm").get<int>();
  g.smem = j.at("smem").get<SmemModel>();
  g.role1_smem = j.at("role1_smem").get<int>();
  g.partition = j.at("partition").get<Partition>();
  g.dispatch = j.at("dispatch").get<RoleLaunch>();
  g.compute = j.at("compute").get<RoleLaunch>();
  g.relay = j.at("relay").get<RoleLaunch>();
  g.finalize = j.at("finalize").get<RoleLaunch>();
  g.notes = j.at("notes").get<std::vector<std::string>>();
}

}  // namespace moejit::codegen
