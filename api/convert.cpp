#include "api/convert.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "codegen/moe_atoms.hpp"

namespace moejit::api {

namespace {
// A string field naming one of an enum's values, or Error(field) listing them.
template <class E, std::size_t N>
E parse_field(const char* field, const std::string& text, const E (&all)[N], std::string_view (*name)(E)) {
  if (const auto v = codegen::parse_name(text, all, name)) return *v;
  throw Error(field, fmt::format("{} = '{}' is invalid: must be {}", field, text, codegen::names_of(all, name)));
}
// An option left empty for the planner's choice: unset when empty, else parse(text), or Error(field) saying what
// is allowed.
template <class Parse>
auto parse_option(const char* field, const std::string& text, Parse parse, std::string_view allowed) {
  decltype(parse(text)) v;
  if (!text.empty() && !(v = parse(text)))
    throw Error(field, fmt::format("{} = '{}' is invalid: must be {}", field, text, allowed));
  return v;
}
}  // namespace

codegen::MoeConfig to_internal(const Config& c) {
  codegen::MoeConfig m;
  m.name = c.name;
  m.ranks = c.ranks;
  m.experts = c.experts;
  m.top_k = c.top_k;
  m.hidden = c.hidden;
  m.intermediate = c.intermediate;
  m.recipe = parse_field("recipe", c.recipe, codegen::k_recipes, codegen::recipe_name);
  m.swiglu_clamp = c.swiglu_clamp;
  m.activation = parse_field("activation", c.activation, codegen::k_activations, codegen::activation_name);
  m.alpha = c.alpha;
  m.gate_up = parse_field("gate_up", c.gate_up, codegen::k_gate_ups, codegen::gate_up_name);
  m.biases = c.biases;
  if (c.shared_expert_k_group) m.shared_expert = codegen::SharedExpert{*c.shared_expert_k_group};
  m.dispatch_sms = c.dispatch_sms;
  m.token_capacity = c.token_capacity;
  m.batched_routes = c.batched_routes;
  return m;
}

Config to_public(const codegen::MoeConfig& m) {
  Config c;
  c.name = m.name;
  c.ranks = m.ranks;
  c.experts = m.experts;
  c.top_k = m.top_k;
  c.hidden = m.hidden;
  c.intermediate = m.intermediate;
  c.recipe = std::string(codegen::recipe_name(m.recipe));
  c.swiglu_clamp = m.swiglu_clamp;
  c.activation = std::string(codegen::activation_name(m.activation));
  c.alpha = m.alpha;
  c.gate_up = std::string(codegen::gate_up_name(m.gate_up));
  c.biases = m.biases;
  c.shared_expert_k_group = m.shared_expert ? std::optional<int>(m.shared_expert->k_group) : std::nullopt;
  c.dispatch_sms = m.dispatch_sms;
  c.token_capacity = m.token_capacity;
  c.batched_routes = m.batched_routes;
  return c;
}

codegen::MoeCodegenOptions codegen_options(const LayerOptions& o) {
  codegen::MoeCodegenOptions c;
  c.path = parse_option("path", o.path, codegen::parse_path, "exact, fast or empty (the target's default)");
  c.input_bf16 = o.input_bf16;
  c.tile_n = o.tile_n;
  c.stages = o.stages;
  c.ctas_per_sm = o.ctas_per_sm;
  c.schedule =
      parse_option("schedule", o.schedule, codegen::parse_schedule, "stream, units, items or empty (as planned)");
  c.ep_mode = parse_option("ep_mode", o.ep_mode, codegen::parse_ep_mode,
                           "none or a +-joined list of mirror, pull, staged-returns, direct-scan (empty: as planned)");
  if (o.dispatch_sms != -1) c.dispatch_sms = o.dispatch_sms;
  codegen::validate(c);
  return c;
}

runtime::MoeLayerOptions layer_options(const LayerOptions& o) {
  runtime::MoeLayerOptions r;
  r.codegen = codegen_options(o);
  r.device = o.device;
  r.check_routes_on_host = o.check_routes_on_host;
  r.pdl = o.pdl;
  r.use_graphs = o.use_graphs;
  return r;
}

namespace {
RolePlan to_public(const codegen::RolePlan& r) {
  return {r.launched, r.grid, r.threads, r.smem_bytes, r.blocks_per_sm, r.register_cap};
}
}  // namespace

Plan to_public(const codegen::MoeLaunchPlan& p) {
  Plan out;
  out.model = p.model;
  out.device = p.device;
  out.target = p.target;
  out.atom = p.atom;
  out.path = p.options.path ? std::string(codegen::path_name(*p.options.path)) : std::string();
  out.batch = p.batch;
  out.tile_n = p.tile_n;
  out.stages = p.stages;
  out.schedule = std::string(codegen::schedule_name(p.schedule));
  out.pdl = p.pdl;
  out.ep_mode = codegen::ep_mode_names(p.ep.mode);
  out.dispatch_sms = p.ep.dispatch_sms;
  out.dispatch = to_public(p.dispatch);
  out.compute = to_public(p.compute);
  out.finalize = to_public(p.finalize);
  out.workspace_bytes = p.workspace_bytes;
  out.notes = p.notes;
  out.json = nlohmann::json(p).dump(2);
  return out;
}

runtime::MoeForwardArgs to_internal(const ForwardArgs& a) {
  runtime::MoeForwardArgs r;
  r.x_q = a.x_q;
  r.x_scales = a.x_scales;
  r.x_bf16 = a.x_bf16;
  r.topk_ids = a.topk_ids;
  r.topk_weights = a.topk_weights;
  r.y = a.y;
  r.tokens = a.tokens;
  r.workspace = a.workspace;
  return r;
}

runtime::PackedWeightsDevice to_internal(const PackedWeightsDevice& p) {
  return {p.w1, p.w2, p.top_scale_code, p.atom, p.b1, p.b2, p.subnormal_weight_scales};
}

runtime::CheckpointWeightsHost to_internal(const CheckpointWeightsHost& w) {
  return {w.w1, w.s1, w.w2, w.s2, w.w1_bytes, w.s1_bytes, w.w2_bytes, w.s2_bytes};
}

}  // namespace moejit::api
