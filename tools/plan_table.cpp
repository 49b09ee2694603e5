#include "tools/plan_table.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <nlohmann/json.hpp>

namespace moejit::tools {
namespace {
using codegen::Geometry;

struct Row {
  const char* label;
  std::function<std::string(const Geometry&)> cell;
};

std::string yes_no(bool b) {
  return b ? "yes" : "no";
}
std::string launch(const codegen::RoleLaunch& r) {
  return fmt::format("{}x{}", r.grid, r.threads);
}

const std::vector<Row>& rows() {
  static const std::vector<Row> k_rows = {
      {"rows/expert r", [](const Geometry& g) { return std::to_string(g.rows_per_expert); }},
      {"tile_n", [](const Geometry& g) { return std::to_string(g.tile_n); }},
      {"token tiles/expert", [](const Geometry& g) { return std::to_string(g.tiles_per_expert); }},
      {"stages", [](const Geometry& g) { return std::to_string(g.stages); }},
      {"compact weights", [](const Geometry& g) { return yes_no(g.compact_weights); }},
      {"handoff", [](const Geometry& g) { return std::string(codegen::handoff_name(g.handoff)); }},
      {"handoff slots s", [](const Geometry& g) { return std::to_string(g.handoff_slots); }},
      {"batched BF16 returns", [](const Geometry& g) { return yes_no(g.batched_returns); }},
      {"mirrored metadata", [](const Geometry& g) { return yes_no(g.mirrored_metadata); }},
      {"resident relay copiers", [](const Geometry& g) { return yes_no(g.relay_staging); }},
      {"pull cache", [](const Geometry& g) { return yes_no(g.pull_cache); }},
      {"pull batch depth", [](const Geometry& g) { return std::to_string(g.pull_batch_depth); }},
      {"direct scan", [](const Geometry& g) { return yes_no(g.direct_scan); }},
      {"l (l2 dedicated)", [](const Geometry& g) { return std::to_string(g.l2_dedicated); }},
      {"co-residency c", [](const Geometry& g) { return std::to_string(g.co_residency); }},
      {"register cap Rcap",
       [](const Geometry& g) { return g.register_cap ? std::to_string(g.register_cap) : std::string("none"); }},
      {"P_W / P_X (B)",
       [](const Geometry& g) {
         return fmt::format("{}/{}", g.smem.stage_weight_bytes, g.smem.stage_activation_bytes);
       }},
      {"B_ret / B_util (B)",
       [](const Geometry& g) { return fmt::format("{}/{}", g.smem.return_bytes, g.smem.util_bytes); }},
      {"S_model (B)", [](const Geometry& g) { return std::to_string(g.smem.model_bytes); }},
      {"shared / relay term (B)",
       [](const Geometry& g) { return fmt::format("{}/{}", g.smem.shared_term, g.smem.relay_term); }},
      {"S_role2 (B)", [](const Geometry& g) { return std::to_string(g.smem.role2_bytes); }},
      {"loads in flight/SM (B)", [](const Geometry& g) { return std::to_string(g.loads_in_flight_per_sm); }},
      {"dispatch grid x threads", [](const Geometry& g) { return launch(g.dispatch); }},
      {"compute grid x threads", [](const Geometry& g) { return launch(g.compute); }},
      {"relay copier CTAs", [](const Geometry& g) { return std::to_string(g.relay.grid); }},
      {"finalize grid x threads", [](const Geometry& g) { return launch(g.finalize); }},
  };
  return k_rows;
}

std::string header(const codegen::MoeConfig& c, const codegen::DeviceProfile& d) {
  std::string out = fmt::format(
      "model    {}: H={} I={} E={} k={}, R={} (L={}), Bcap={}, {}, clamp {}, {}\n", c.name, c.hidden, c.intermediate,
      c.experts, c.top_k, c.ranks, c.local_experts(), c.token_capacity, codegen::recipe_name(c.recipe),
      c.swiglu_clamp ? fmt::format("{}", *c.swiglu_clamp) : std::string("off"),
      c.shared_expert ? fmt::format("fused shared expert (K-group {})", c.shared_expert->k_group)
                      : std::string("routed only"));
  out += fmt::format("device   {}: {}, {} SMs, {} KiB SMEM/SM, {} KiB/block, {} regs/SM, green-context alignment {}\n",
                     d.name, d.target.name(), d.sm_count, d.smem_per_sm / 1024, d.smem_per_block / 1024, d.regs_per_sm,
                     d.gc_granularity);
  return out;
}
}  // namespace

std::string render_plan_table(const codegen::MoeConfig& config, const codegen::DeviceProfile& device,
                              const std::vector<PlanOutcome>& plans, bool explain) {
  std::string out = header(config, device);
  for (const PlanOutcome& p : plans) {
    if (!p.geometry) continue;
    const codegen::Partition& part = p.geometry->partition;
    out += fmt::format("split    {} dispatch + {} compute SMs (eq. 5)\n", part.dispatch, part.compute);
    break;
  }
  size_t label_width = std::string("B (tokens/rank)").size();
  for (const Row& r : rows()) label_width = std::max(label_width, std::string(r.label).size());
  std::vector<std::vector<std::string>> columns;
  std::vector<size_t> widths;
  for (const PlanOutcome& p : plans) {
    std::vector<std::string> col{std::to_string(p.batch)};
    for (const Row& r : rows()) col.push_back(p.geometry ? r.cell(*p.geometry) : (&r == &rows()[0] ? "rejected" : "-"));
    size_t w = 0;
    for (const std::string& s : col) w = std::max(w, s.size());
    widths.push_back(w);
    columns.push_back(std::move(col));
  }
  out += "\n";
  for (size_t row = 0; row <= rows().size(); ++row) {
    std::string line = fmt::format("{:<{}}", row == 0 ? "B (tokens/rank)" : rows()[row - 1].label, label_width);
    for (size_t c = 0; c < columns.size(); ++c) line += fmt::format("  {:>{}}", columns[c][row], widths[c]);
    out += line + "\n";
  }
  for (const PlanOutcome& p : plans)
    if (!p.geometry) out += fmt::format("\nB = {} rejected: {}\n", p.batch, p.rejection);
  if (explain) {
    for (const PlanOutcome& p : plans) {
      if (!p.geometry) continue;
      out += fmt::format("\nB = {}: decisions\n", p.batch);
      for (const std::string& n : p.geometry->notes) out += fmt::format("  - {}\n", n);
    }
  }
  return out;
}

nlohmann::json plan_report_json(const codegen::MoeConfig& config, const codegen::DeviceProfile& device,
                                const std::vector<PlanOutcome>& plans) {
  nlohmann::json list = nlohmann::json::array();
  for (const PlanOutcome& p : plans) {
    if (p.geometry)
      list.push_back({{"batch", p.batch}, {"geometry", *p.geometry}});
    else
      list.push_back({{"batch", p.batch}, {"rejected", p.rejection}});
  }
  return {{"config", config}, {"device", device}, {"plans", list}};
}

}  // namespace moejit::tools
