#include "codegen/moe_kernels.hpp"

#include <fmt/format.h>

#include "templates/moe_contract.cuh"
#include "templates/moe_weight_layouts.cuh"

namespace moejit::codegen {

contract::ProjectionShape projection_shape(const MoeConfig& config, Projection which) {
  const int h = padded_hidden(config), i = padded_intermediate(config);
  const bool interleaved = config.gate_up == GateUp::interleaved;
  if (which == Projection::w1) return {2 * i, h, 2 * config.intermediate, config.hidden, true, interleaved};
  return {h, i, config.hidden, config.intermediate, false, false};
}

namespace {
KernelSpec base_spec(const char* kernel, const char* tmpl, const char* fn, const std::string& target, int threads) {
  KernelSpec s;
  s.kernel = kernel;
  s.template_file = tmpl;
  s.device_function = fn;
  s.target = parse_target(target).value();
  s.threads = threads;
  return s;
}

contract::MoeDims dims_of(const MoeConfig& c, const MoeLaunchPlan& plan) {
  return workspace_dims(c, plan.contract_path, plan.ep.mode);
}

// The workspace dimensions as template constants, in the order the role templates take them.
std::vector<std::pair<std::string, std::int64_t>> dims_constants(const contract::MoeDims& d) {
  return {{"kExperts", d.experts},   {"kTopK", d.top_k}, {"kHidden", d.hidden}, {"kInter", d.inter},
          {"kCapacity", d.capacity}, {"kPath", d.path},  {"kShared", d.shared}};
}

int schedule_constant(const MoeLaunchPlan& plan) {
  return plan.schedule == Schedule::units   ? contract::kScheduleUnits
         : plan.schedule == Schedule::items ? contract::kScheduleItems
                                            : contract::kScheduleStream;
}

// The entry asserts the workspace layout the host carves.
std::pair<std::string, std::int64_t> workspace_check(const contract::MoeDims& d) {
  return {fmt::format("moejit::contract::workspace_layout({{{}, {}, {}, {}, {}, {}, {}, {}, {}}}).fixed_bytes",
                      d.experts, d.top_k, d.hidden, d.inter, d.capacity, d.path, d.shared, d.ranks, d.ep),
          contract::workspace_layout(d).fixed_bytes};
}
}  // namespace

std::optional<KernelSpec> moe_dispatch_spec(const MoeConfig& config, const MoeLaunchPlan& plan) {
  if (!plan.dispatch.launched) return std::nullopt;
  const contract::MoeDims d = dims_of(config, plan);
  KernelSpec s =
      base_spec("moe_dispatch", "moe_dispatch.cuh", "moejit::moe_dispatch", plan.target, plan.dispatch.threads);
  s.constants = dims_constants(d);
  s.constants.emplace_back("kHiddenIn", config.hidden);
  s.constants.emplace_back("kInputBf16", plan.options.input_bf16 ? 1 : 0);
  // W4A16 stages the caller's BF16 rows as they are (padded); w4a8-mx quantizes them.
  s.constants.emplace_back("kQuantize", config.recipe == Recipe::w4a8_mx ? 1 : 0);
  s.constants.emplace_back("kImage", contract::path_fp8_rows(plan.contract_path) ? 0 : 1);
  s.constants.emplace_back("kRanks", d.ranks);
  s.constants.emplace_back("kEp", plan.ep.mode);  // contract::EpMode
  s.constants.emplace_back("kFrame", plan.token_frame ? 1 : 0);
  s.constants.emplace_back("kThreads", plan.dispatch.threads);  // the token frame holds a row in one CTA's registers
  s.params = {
      {"x_q", ParamType::ptr, "const moejit::u8*"},
      {"x_scales", ParamType::ptr, "const moejit::u8*"},
      {"x_bf16", ParamType::ptr, "const moejit::u16*"},
      // Expert parallelism publishes them to the other ranks (unread with one).
      {"topk_ids", ParamType::ptr, "const moejit::i32*"},
      {"topk_weights", ParamType::ptr, "const float*"},
      {"tokens", ParamType::u32, "moejit::u32"},
      {"ws", ParamType::ptr, "moejit::u8*"},
  };
  s.static_checks = {workspace_check(d)};
  // Programmatic dependent launch: the compute role's launch is released here.
  s.required_instructions = {"griddepcontrol.launch_dependents"};
  return s;
}

KernelSpec moe_compute_spec(const MoeConfig& config, const MoeLaunchPlan& plan) {
  const AtomTraits* atom = nullptr;
  for (const AtomTraits& a : all_atoms())
    if (a.name == plan.atom) atom = &a;
  if (!atom) throw std::invalid_argument("moe_compute_spec: unknown atom '" + plan.atom + "'");
  const contract::MoeDims d = dims_of(config, plan);
  KernelSpec s = base_spec("moe_compute", "moe_compute.cuh", atom->compute_function, plan.target, plan.compute.threads);
  s.constants = {{"kExperts", d.experts},
                 {"kTopK", d.top_k},
                 {"kHidden", d.hidden},
                 {"kInter", d.inter},
                 {"kCapacity", d.capacity},
                 {"kGroups", plan.groups},
                 {"kTiles", plan.tiles},
                 {"kTileN", plan.tile_n},
                 {"kStages", plan.stages},
                 {"kGrid", plan.compute.grid},
                 {"kActivation", config.activation == Activation::gpt_oss ? 1 : 0},
                 {"kShared", d.shared},
                 {"kDecoded", plan.decoded_scales ? 1 : 0},
                 {"kSubnormalScales", plan.subnormal_weight_scales ? 1 : 0},
                 {"kRanks", d.ranks},
                 {"kEp", plan.ep.mode},
                 {"kSchedule", schedule_constant(plan)},
                 {"kPaired", !plan.paired_rows                                         ? contract::kPairedNone
                             : plan.batch <= contract::kPairedRows && plan.tile_n == 8 ? contract::kPairedAll
                                                                                       : contract::kPairedShort},
                 {"kActWarps", plan.activation_warps},
                 {"kTokenFrame", plan.token_frame ? 1 : 0},
                 {"kWarpTables", plan.warp_tables ? 1 : 0}};
  s.min_blocks_per_sm = plan.compute.blocks_per_sm;
  s.max_registers = plan.compute.register_cap;  // the occupancy pass pins it as .maxnreg
  s.params_struct = "moejit::ComputeParams";
  s.params = {
      {"topk_ids", ParamType::ptr, "const moejit::i32*"},
      {"topk_weights", ParamType::ptr, "const float*"},
      {"x_rows", ParamType::ptr, "const moejit::u8*"},
      {"x_scales", ParamType::ptr, "const moejit::u32*"},
      // Each map is read twice: its prefetch, and the select of the phase's map (GEMM1 or GEMM2).
      {"w1_map", ParamType::tensormap, "const void*", 2},
      {"w2_map", ParamType::tensormap, "const void*", 2},
      {"ws", ParamType::ptr, "moejit::u8*"},
      {"b1", ParamType::ptr, "const float2*"},
      {"b2", ParamType::ptr, "const float*"},
      {"tokens", ParamType::u32, "moejit::u32"},
      {"clamp", ParamType::f32, "float"},
      {"alpha", ParamType::f32, "float"},
      {"trace", ParamType::ptr, "moejit::u64*"},
  };
  s.static_checks = {
      {fmt::format("moejit::contract::compute_smem_layout({}, {}, {}, {}, {}, {}, {}, {}).total", plan.contract_path,
                   plan.groups, plan.tiles, plan.tile_n, plan.stages, d.experts + d.shared, plan.compute.grid,
                   plan.decoded_scales),
       plan.compute.smem_bytes},
      {fmt::format("moejit::contract::compute_threads({}, {}, {})", plan.groups, plan.decoded_scales,
                   plan.activation_warps),
       plan.compute.threads},
      {"sizeof(moejit::ComputeParams)", 9 * 8 + 4 + 4 + 4 + 4 + 8},  // 4 bytes of padding before trace
      {fmt::format("moejit::contract::weight_box_rows({})", plan.tiles), contract::weight_box_rows(plan.tiles)},
      workspace_check(d),
  };
  s.required_instructions = atom->required_instructions;
  s.required_instructions.push_back("griddepcontrol.wait");
  s.required_instructions.push_back("griddepcontrol.launch_dependents");
  return s;
}

KernelSpec moe_finalize_spec(const MoeConfig& config, const MoeLaunchPlan& plan) {
  const contract::MoeDims d = dims_of(config, plan);
  KernelSpec s =
      base_spec("moe_finalize", "moe_finalize.cuh", "moejit::moe_finalize", plan.target, plan.finalize.threads);
  s.constants = dims_constants(d);
  s.constants.emplace_back("kHiddenIn", config.hidden);
  s.constants.emplace_back("kRanks", d.ranks);
  s.constants.emplace_back("kEp", plan.ep.mode);
  // The unit schedule's partial rows sit after the compute grid's slots (contract::partials_offset); the
  // stream and item schedules' finalize does not depend on the grid, and is one kernel for both.
  s.constants.emplace_back("kSchedule",
                           plan.schedule == Schedule::units ? contract::kScheduleUnits : contract::kScheduleStream);
  s.constants.emplace_back("kGrid", plan.schedule == Schedule::units ? plan.compute.grid : 0);
  s.params = {
      {"topk_ids", ParamType::ptr, "const moejit::i32*"},
      {"y", ParamType::ptr, "moejit::u16*"},
      {"tokens", ParamType::u32, "moejit::u32"},
      {"ws", ParamType::ptr, "moejit::u8*"},  // expert parallelism records a wait that gave up in its header
  };
  s.static_checks = {workspace_check(d)};
  s.required_instructions = {"griddepcontrol.wait"};
  return s;
}

std::vector<KernelSpec> moe_role_specs(const MoeConfig& config, const MoeLaunchPlan& plan) {
  std::vector<KernelSpec> out;
  if (auto d = moe_dispatch_spec(config, plan)) out.push_back(std::move(*d));
  out.push_back(moe_compute_spec(config, plan));
  out.push_back(moe_finalize_spec(config, plan));
  return out;
}

std::string role_kernels_key(const std::vector<KernelSpec>& role_specs) {
  std::string key;
  for (const KernelSpec& spec : role_specs) key += spec.summary() + "\n";
  return key;
}

KernelSpec moe_weight_transform_spec(const MoeConfig& config, const AtomTraits& atom, Target target, Projection which) {
  const bool w1 = which == Projection::w1;
  KernelSpec s = base_spec("moe_weight_transform", "moe_weight_transform.cuh", "moejit::moe_weight_transform",
                           std::string(target.name()), k_transform_threads);
  const contract::ProjectionShape shape = projection_shape(config, which);
  s.constants = {{"kExperts", config.weight_experts()},
                 {"kRows", shape.rows},
                 {"kK", shape.k},
                 {"kSrcRows", shape.src_rows},
                 {"kSrcK", shape.src_k},
                 {"kW1", w1 ? 1 : 0},
                 {"kGateUpInterleaved", shape.gate_up_interleaved ? 1 : 0},
                 {"kLayout", atom.weight_layout}};
  s.params = {
      {"payload_in", ParamType::ptr, "const moejit::u8*"},
      {"scales_in", ParamType::ptr, "const moejit::u8*"},
      {"packed", ParamType::ptr, "moejit::u32*"},
      {"status", ParamType::ptr, "int*"},
  };
  s.static_checks = {{"moejit::contract::kWeightStepBytes", contract::kWeightStepBytes}};
  return s;
}

std::vector<KernelSpec> moe_kernel_specs(const MoeConfig& config, int batch, const DeviceProfile& profile,
                                         const MoeCodegenOptions& options) {
  const MoeLaunchPlan plan = plan_launch(config, batch, profile, options);
  std::vector<KernelSpec> out = moe_role_specs(config, plan);
  const AtomTraits* atom = find_atom(profile.target, *plan.options.path, config.recipe);
  out.push_back(moe_weight_transform_spec(config, *atom, profile.target, Projection::w1));
  out.push_back(moe_weight_transform_spec(config, *atom, profile.target, Projection::w2));
  return out;
}

}  // namespace moejit::codegen
