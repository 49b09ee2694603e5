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

struct LaunchRow {
  const char* label;
  std::function<std::string(const codegen::MoeLaunchPlan&)> cell;
};
std::string role(const codegen::RolePlan& r) {
  return r.launched ? fmt::format("{}x{}", r.grid, r.threads) : std::string("-");
}

const std::vector<LaunchRow>& launch_rows() {
  static const std::vector<LaunchRow> k_rows = {
      {"path / atom",
       [](const codegen::MoeLaunchPlan& p) {
         return fmt::format("{}/{}", codegen::path_name(*p.options.path), p.atom);
       }},
      {"rows/expert r", [](const codegen::MoeLaunchPlan& p) { return std::to_string(p.rows_per_expert); }},
      {"tile_n (widest N)", [](const codegen::MoeLaunchPlan& p) { return std::to_string(p.tile_n); }},
      {"item rows (64 x tiles)", [](const codegen::MoeLaunchPlan& p) { return std::to_string(64 * p.tiles); }},
      {"stages", [](const codegen::MoeLaunchPlan& p) { return std::to_string(p.stages); }},
      {"GEMM1 rows paired", [](const codegen::MoeLaunchPlan& p) { return std::string(p.paired_rows ? "yes" : "no"); }},
      {"activation frame",
       [](const codegen::MoeLaunchPlan& p) { return std::string(p.token_frame ? "token" : "MX block"); }},
      {"schedule", [](const codegen::MoeLaunchPlan& p) { return std::string(codegen::schedule_name(p.schedule)); }},
      {"routing tables", [](const codegen::MoeLaunchPlan& p) { return std::string(p.warp_tables ? "warp" : "block"); }},
      {"PDL between roles", [](const codegen::MoeLaunchPlan& p) { return std::string(p.pdl ? "on" : "off"); }},
      {"activation warps", [](const codegen::MoeLaunchPlan& p) { return std::to_string(p.activation_warps); }},
      {"EP modes (R > 1)", [](const codegen::MoeLaunchPlan& p) { return codegen::ep_mode_names(p.ep.mode); }},
      {"dispatch SMs (split)", [](const codegen::MoeLaunchPlan& p) { return std::to_string(p.ep.dispatch_sms); }},
      {"dispatch grid x threads", [](const codegen::MoeLaunchPlan& p) { return role(p.dispatch); }},
      {"compute grid x threads", [](const codegen::MoeLaunchPlan& p) { return role(p.compute); }},
      {"compute SMEM (B)", [](const codegen::MoeLaunchPlan& p) { return std::to_string(p.compute.smem_bytes); }},
      {"compute CTAs/SM", [](const codegen::MoeLaunchPlan& p) { return std::to_string(p.compute.blocks_per_sm); }},
      {"compute .maxnreg", [](const codegen::MoeLaunchPlan& p) { return std::to_string(p.compute.register_cap); }},
      {"weight scale code 0",  // what the fast atom's K-loop reads it as (MoeCodegenOptions::subnormal_weight_scales)
       [](const codegen::MoeLaunchPlan& p) {
         return p.contract_path != contract::kPathSm90Fp8 ? std::string("-")
                : p.subnormal_weight_scales               ? std::string("2^-127")
                                                          : std::string("0.0");
       }},
      {"finalize grid x threads", [](const codegen::MoeLaunchPlan& p) { return role(p.finalize); }},
      {"workspace (MiB)",
       [](const codegen::MoeLaunchPlan& p) { return fmt::format("{:.1f}", p.workspace_bytes / 1048576.0); }},
  };
  return k_rows;
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

namespace {
// Columns of cells (one per batch) under a label column, each cell right-aligned.
std::string render_columns(const std::vector<std::string>& labels, const std::vector<std::vector<std::string>>& cols) {
  size_t label_width = 0;
  for (const std::string& l : labels) label_width = std::max(label_width, l.size());
  std::vector<size_t> widths;
  for (const auto& col : cols) {
    size_t w = 0;
    for (const std::string& c : col) w = std::max(w, c.size());
    widths.push_back(w);
  }
  std::string out;
  for (size_t row = 0; row < labels.size(); ++row) {
    std::string line = fmt::format("{:<{}}", labels[row], label_width);
    for (size_t c = 0; c < cols.size(); ++c) line += fmt::format("  {:>{}}", cols[c][row], widths[c]);
    out += line + "\n";
  }
  return out;
}
}  // namespace

std::string render_plan_table(const codegen::MoeConfig& config, const codegen::DeviceProfile& device,
                              const std::vector<PlanOutcome>& plans, bool explain) {
  std::string out = header(config, device);

  out += "\nlaunch plan (what MoeLayer launches for each B; `moejit run` prints the same)\n";
  std::vector<std::string> labels{"B (tokens/rank)"};
  for (const LaunchRow& r : launch_rows()) labels.push_back(r.label);
  std::vector<std::vector<std::string>> cols;
  for (const PlanOutcome& p : plans) {
    std::vector<std::string> col{std::to_string(p.batch)};
    for (const LaunchRow& r : launch_rows())
      col.push_back(p.launch ? r.cell(*p.launch) : (&r == &launch_rows()[0] ? "rejected" : "-"));
    cols.push_back(std::move(col));
  }
  out += render_columns(labels, cols);
  for (const PlanOutcome& p : plans)
    if (!p.launch) out += fmt::format("B = {} launch rejected: {}\n", p.batch, p.launch_rejection);

  out +=
      "\nGC-MoE section 4.4 chain (the paper's Table 2 rule set for expert-parallel decode; its grids are\n"
      "the paper's role kernels, not the launch above)\n";
  for (const PlanOutcome& p : plans) {
    if (!p.geometry) continue;
    const codegen::Partition& part = p.geometry->partition;
    out += fmt::format("split    {} dispatch + {} compute SMs (eq. 5)\n", part.dispatch, part.compute);
    break;
  }
  labels = {"B (tokens/rank)"};
  for (const Row& r : rows()) labels.push_back(r.label);
  cols.clear();
  for (const PlanOutcome& p : plans) {
    std::vector<std::string> col{std::to_string(p.batch)};
    for (const Row& r : rows()) col.push_back(p.geometry ? r.cell(*p.geometry) : (&r == &rows()[0] ? "rejected" : "-"));
    cols.push_back(std::move(col));
  }
  out += render_columns(labels, cols);
  for (const PlanOutcome& p : plans)
    if (!p.geometry) out += fmt::format("\nB = {} rejected: {}\n", p.batch, p.rejection);
  if (explain) {
    for (const PlanOutcome& p : plans) {
      if (p.launch) {
        out += fmt::format("\nB = {}: launch decisions\n", p.batch);
        for (const std::string& n : p.launch->notes) out += fmt::format("  - {}\n", n);
      }
      if (p.geometry) {
        out += fmt::format("\nB = {}: section 4.4 decisions\n", p.batch);
        for (const std::string& n : p.geometry->notes) out += fmt::format("  - {}\n", n);
      }
    }
  }
  return out;
}

nlohmann::json plan_report_json(const codegen::MoeConfig& config, const codegen::DeviceProfile& device,
                                const std::vector<PlanOutcome>& plans) {
  nlohmann::json list = nlohmann::json::array();
  for (const PlanOutcome& p : plans) {
    nlohmann::json entry = {{"batch", p.batch}};
    if (p.launch)
      entry["launch"] = *p.launch;
    else
      entry["launch_rejected"] = p.launch_rejection;
    if (p.geometry)
      entry["geometry"] = *p.geometry;
    else
      entry["rejected"] = p.rejection;
    list.push_back(std::move(entry));
  }
  return {{"config", config}, {"device", device}, {"plans", list}};
}

}  // namespace moejit::tools
