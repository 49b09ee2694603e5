#include "codegen/moe_kernels.hpp"

namespace moejit::codegen {
namespace {
// The workspace formals, in the order of MOEJIT_WORKSPACE_FORMALS (templates/moe_workspace.cuh).
std::vector<KernelParam> workspace_params() {
  return {
      {"ws_header", ParamType::ptr, "moejit::MoeHeader*"},
      {"ws_token_poison", ParamType::ptr, "int*"},
      {"ws_route_slot", ParamType::ptr, "int*"},
      {"ws_active_expert", ParamType::ptr, "int*"},
      {"ws_active_rows", ParamType::ptr, "int*"},
      {"ws_active_base", ParamType::ptr, "int*"},
      {"ws_item_begin1", ParamType::ptr, "int*"},
      {"ws_item_begin2", ParamType::ptr, "int*"},
      {"ws_l1_done", ParamType::ptr, "int*"},
      {"ws_l1_target", ParamType::ptr, "int*"},
      {"ws_x_q", ParamType::ptr, "moejit::u8*"},
      {"ws_x_scales", ParamType::ptr, "moejit::u32*"},
      {"ws_x_bf16", ParamType::ptr, "moejit::u16*"},
      {"ws_handoff", ParamType::ptr, "moejit::u16*"},
      {"ws_arena", ParamType::ptr, "moejit::u16*"},
  };
}

std::vector<KernelParam> with_workspace(std::vector<KernelParam> params) {
  for (KernelParam& p : workspace_params()) params.push_back(std::move(p));
  return params;
}

KernelSpec base_spec(const char* kernel, const char* tmpl, const char* fn, Target target, int threads) {
  KernelSpec s;
  s.kernel = kernel;
  s.template_file = tmpl;
  s.device_function = fn;
  s.target = target;
  s.threads = threads;
  return s;
}
}  // namespace

int compute_smem_bytes(const MoeKernelShape& shape, Target target) {
  const int x_row_bytes = target.arch == Arch::sm_120a ? 128 + 16 : k_x_row_bytes;
  const int stage = k_weight_stage_bytes + shape.tile_n * x_row_bytes;
  return shape.stages * stage + 2 * 8 * shape.stages + 4 * 4 * shape.tile_n;
}

KernelSpec moe_dispatch_spec(const MoeKernelShape& shape, Target target) {
  KernelSpec s =
      base_spec("moe_dispatch", "moe_dispatch.cuh", "moejit::moe_dispatch_entry", target, k_dispatch_threads);
  s.constants = {{"kExperts", shape.experts},
                 {"kTopK", shape.top_k},
                 {"kHidden", shape.hidden},
                 {"kTileN", shape.tile_n},
                 {"kTiles1", 2 * shape.intermediate / 64},
                 {"kTiles2", shape.hidden / 64},
                 {"kThreads", k_dispatch_threads},
                 {"kInputBf16", shape.input_bf16 ? 1 : 0},
                 {"kFp8Rows", target.arch == Arch::sm_120a ? 1 : 0}};
  s.params = with_workspace({
      {"topk_ids", ParamType::ptr, "const int*"},
      {"x_q", ParamType::ptr, "const moejit::u8*"},
      {"x_scales", ParamType::ptr, "const moejit::u32*"},
      {"x_bf16", ParamType::ptr, "const moejit::u16*"},
      {"tokens", ParamType::u32, "moejit::u32"},
  });
  // Programmatic dependent launch: the compute role's launch is released here.
  s.required_instructions = {"griddepcontrol.launch_dependents"};
  return s;
}

KernelSpec moe_compute_spec(const MoeKernelShape& shape, Target target) {
  // The MMA atom is the point of variation between targets.
  const bool native_block_scaled = target.arch == Arch::sm_120a;
  KernelSpec s = base_spec("moe_compute", "moe_compute.cuh",
                           native_block_scaled ? "moejit::moe_compute_sm120_entry" : "moejit::moe_compute_sm90_entry",
                           target, k_compute_threads);
  s.constants = {{"kHidden", shape.hidden},
                 {"kInter", shape.intermediate},
                 {"kTopK", shape.top_k},
                 {"kTileN", shape.tile_n},
                 {"kStages", shape.stages}};
  s.min_blocks_per_sm = shape.min_blocks_per_sm;
  s.max_registers = shape.max_registers;  // the occupancy pass pins it as .maxnreg
  s.params = with_workspace({
      // Each map is read twice: its prefetch, and the select of the map for a work item (gemm1 or gemm2).
      {"w1_map", ParamType::tensormap, "const void*", 2},
      {"w2_map", ParamType::tensormap, "const void*", 2},
      {"w1_scales", ParamType::ptr, "const moejit::u32*"},
      {"w2_scales", ParamType::ptr, "const moejit::u32*"},
      {"topk_weights", ParamType::ptr, "const float*"},
      {"clamp", ParamType::f32, "float"},
  });
  s.required_instructions = {"cp.async.bulk.tensor",
                             native_block_scaled ? "mma.sync.aligned.kind::mxf8f6f4.block_scale"
                                                 : "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32",
                             "griddepcontrol.wait", "griddepcontrol.launch_dependents"};
  return s;
}

KernelSpec moe_finalize_spec(const MoeKernelShape& shape, Target target) {
  KernelSpec s =
      base_spec("moe_finalize", "moe_finalize.cuh", "moejit::moe_finalize_entry", target, k_finalize_threads);
  s.constants = {{"kHidden", shape.hidden}, {"kTopK", shape.top_k}};
  s.params = with_workspace({
      {"y", ParamType::ptr, "moejit::u16*"},
      {"tokens", ParamType::u32, "moejit::u32"},
  });
  s.required_instructions = {"griddepcontrol.wait"};
  return s;
}

KernelSpec moe_weight_transform_spec(int experts, int rows, int k, bool interleave, Target target) {
  KernelSpec s = base_spec("moe_weight_transform", "moe_weight_transform.cuh", "moejit::moe_weight_transform", target,
                           k_transform_threads);
  s.constants = {{"kExperts", experts},
                 {"kRows", rows},
                 {"kK", k},
                 {"kInterleave", interleave ? 1 : 0},
                 {"kNibbleOrder", target.arch == Arch::sm_120a ? 1 : 0}};
  s.params = {
      {"payload_in", ParamType::ptr, "const moejit::u8*"},
      {"scales_in", ParamType::ptr, "const moejit::u8*"},
      {"payload_out", ParamType::ptr, "moejit::u32*"},
      {"scales_out", ParamType::ptr, "moejit::u32*"},
      {"status", ParamType::ptr, "int*"},
  };
  return s;
}

}  // namespace moejit::codegen
