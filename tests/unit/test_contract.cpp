// One contract: the host and the kernels cannot disagree on the SMEM layout,
// the thread count, the workspace or the kernel arguments without a build or
// launch-preparation error. Each test changes one side only and expects the
// failure, naming what differs.
#include <doctest/doctest.h>

#include <string>

#include "codegen/emit.hpp"
#include "codegen/moe_kernels.hpp"
#include "codegen/nvrtc_compiler.hpp"
#include "runtime/kernel_args.hpp"

using namespace moejit;

namespace {
codegen::KernelSpec compute_spec() {
  const codegen::MoeConfig glm = codegen::builtin_model("glm5.2");
  return codegen::moe_compute_spec(glm, codegen::plan_launch(glm, 8, codegen::builtin_profile("h200")));
}

// Replaces `from` (which must occur exactly once) by `to` in the embedded header `name`.
void edit_header(codegen::EmittedSource& src, const std::string& name, const std::string& from, const std::string& to) {
  for (auto& [header, text] : src.headers) {
    if (header != name) continue;
    const size_t at = text.find(from);
    REQUIRE(at != std::string::npos);
    REQUIRE(text.find(from, at + 1) == std::string::npos);
    text.replace(at, from.size(), to);
    return;
  }
  FAIL("no header " << name);
}

std::string compile_error(const codegen::EmittedSource& src) {
  try {
    codegen::compile_to_ptx(src, codegen::Target{codegen::Arch::sm_90a});
  } catch (const codegen::CompileError& e) {
    return e.what();
  }
  return "compiled";
}
}  // namespace

TEST_CASE("the unedited compute entry compiles with its contract checks") {
  const codegen::EmittedSource src = codegen::emit_source(compute_spec());
  CHECK(src.text.find("static_assert((moejit::contract::compute_smem_layout(") != std::string::npos);
  CHECK(src.text.find("moejit::ComputeParams{.topk_ids = topk_ids") != std::string::npos);
  CHECK(compile_error(src) == "compiled");
}

TEST_CASE("a kernel whose SMEM layout changed without the host fails to compile, naming the check") {
  codegen::EmittedSource src = codegen::emit_source(compute_spec());
  // The device side of the contract grows the amax exchange; the host planned the old size.
  edit_header(src, "moe_contract_compute.cuh", "l.amax = at, at += 4 * tiles * kConsumerWarps * tile_n;",
              "l.amax = at, at += 8 * tiles * kConsumerWarps * tile_n;");
  const std::string err = compile_error(src);
  CHECK(err.find("host/device contract: moejit::contract::compute_smem_layout(") != std::string::npos);
}

TEST_CASE("a kernel whose thread count or workspace changed without the host fails to compile") {
  codegen::EmittedSource threads = codegen::emit_source(compute_spec());
  edit_header(threads, "moe_contract_paths.cuh",
              "return consumer_threads(groups) + 32 * (1 + act_warps) + (decoded ? 32 : 0);",
              "return consumer_threads(groups) + 32 * (2 + act_warps) + (decoded ? 32 : 0);");
  CHECK(compile_error(threads).find("host/device contract: moejit::contract::compute_threads(") != std::string::npos);
  codegen::EmittedSource ws = codegen::emit_source(compute_spec());
  edit_header(ws, "moe_contract_workspace.cuh", "l.arena = at, at += align_up(2 * routes * d.hidden, 256);",
              "l.arena = at, at += align_up(4 * routes * d.hidden, 256);");
  CHECK(compile_error(ws).find("host/device contract: moejit::contract::workspace_layout(") != std::string::npos);
}

TEST_CASE("a kernel whose arguments moved without the host fails to compile") {
  codegen::EmittedSource src = codegen::emit_source(compute_spec());
  // Swap two pointer formals of the device's parameter struct: same types, other positions.
  edit_header(src, "moe_compute.cuh",
              "  const i32* topk_ids;        // [B][k]\n  const float* topk_weights;  // [B][k]",
              "  const float* topk_weights;  // [B][k]\n  const i32* topk_ids;       // [B][k]");
  CHECK(compile_error(src).find("out-of-order initializers") != std::string::npos);
}

TEST_CASE("launch arguments are bound to the spec by name, and checked before launch") {
  const codegen::KernelSpec spec = compute_spec();
  auto full = [](bool tokens_as_f32 = false) {
    runtime::NamedArgs a;
    a.ptr("topk_ids", 0x100)
        .ptr("topk_weights", 0x200)
        .ptr("x_rows", 0x300)
        .ptr("x_scales", 0x400)
        .map("w1_map", runtime::TensorMapBlob{})
        .map("w2_map", runtime::TensorMapBlob{})
        .ptr("ws", 0x500)
        .ptr("b1", 0)
        .ptr("b2", 0);
    if (tokens_as_f32)
      a.f32("tokens", 8.0f);
    else
      a.u32("tokens", 8);
    a.f32("clamp", 10.0f).f32("alpha", 1.702f).ptr("trace", 0);
    return a;
  };
  runtime::KernelArgs bound = full().bind(spec);
  CHECK(bound.size() == spec.params.size());
  // In the spec's order, whatever order they were given in: tokens is formal 9.
  std::uint32_t tokens = 0;
  std::memcpy(&tokens, bound.pointers()[9], 4);
  CHECK(tokens == 8);

  runtime::NamedArgs missing;
  missing.ptr("topk_ids", 0x100);
  CHECK_THROWS_WITH_AS(missing.bind(spec), "moe_compute: argument 'topk_weights' (ptr) is missing",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(full().ptr("bias", 0x600).bind(spec),
                       "moe_compute: argument 'bias' is not a formal of the kernel", std::invalid_argument);
  CHECK_THROWS_WITH_AS(full().u32("tokens", 9).bind(spec), "moe_compute: argument 'tokens' is given twice",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(full(true).bind(spec), "moe_compute: argument 'tokens' is f32 (4 bytes), the formal is u32",
                       std::invalid_argument);
}
