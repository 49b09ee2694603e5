// `validate`: the formals match the kernel ABI and the target's required
// instructions survived; a lost feature fails with a message naming it.
#include <doctest/doctest.h>

#include "codegen/mma_probe_kernel.hpp"
#include "codegen/smoke_kernel.hpp"
#include "jit/kernel_builder.hpp"
#include "ptx_passes/pipeline.hpp"
#include "tests/ptx/ptx_test_support.hpp"

using namespace moejit;

namespace {
// Every line of `text` that contains `needle`, removed.
std::string without_lines(const std::string& text, std::string_view needle) {
  std::string out;
  size_t removed = 0;
  for (size_t start = 0; start < text.size();) {
    const size_t nl = text.find('\n', start);
    const size_t end = nl == std::string::npos ? text.size() : nl + 1;
    const std::string_view line(text.data() + start, end - start);
    if (line.find(needle) == std::string_view::npos)
      out += line;
    else
      ++removed;
    start = end;
  }
  REQUIRE(removed > 0);
  return out;
}
}  // namespace

TEST_CASE("validate: every kernel's final PTX matches its ABI on every target") {
  for (const codegen::KernelSpec& spec : test::all_kernel_specs()) {
    CAPTURE(spec.summary());
    const ptx::PipelineResult r = ptx::run_pipeline(test::nvrtc_ptx(spec), "k.ptx", jit::pass_options(spec));
    const ptx::PassStage& v = r.stages[3];
    REQUIRE(v.pass == "validate");
    REQUIRE(!v.skipped);
    CHECK(v.ptx == r.stages[2].ptx);  // it checks, it never changes
    REQUIRE(v.summary.size() == 1 + jit::pass_options(spec).abi[0].required_instructions.size());
    CHECK(v.summary[0].find(std::to_string(spec.params.size()) + " formals match the kernel ABI") != std::string::npos);
  }
}

TEST_CASE("validate: the sm_120a MMA probe keeps its block-scaled MMA (FileCheck on the PTX and on the report)") {
  const codegen::KernelSpec spec = codegen::mma_probe_spec(test::sm120());
  const ptx::PipelineResult r =
      ptx::run_pipeline(test::nvrtc_ptx("mma-probe", test::sm120()), "mma.ptx", jit::pass_options(spec));
  test::FileCheckResult fc = test::filecheck(r.final_ptx, R"(
CHECK-LABEL: .visible .entry moejit_mma_probe(
CHECK-COUNT-5: .param .u64 .ptr .align 1 moejit_mma_probe_param_
CHECK: mma.sync.aligned.kind::mxf8f6f4.block_scale.scale_vec::1X.m16n8k32.row.col.f32.e2m1.e4m3.f32.ue8m0 {{{.*}}}, {{{.*}}}, {{{.*}}}, {{{.*}}}, {{{%r[0-9]+}}}, {0, 0}, {{{%r[0-9]+}}}, {0, 0};
CHECK: .ue8m0 {{.*}} {1, 0}
CHECK: .ue8m0 {{.*}} {2, 0}
CHECK: .ue8m0 {{.*}} {3, 0}
)");
  CHECK_MESSAGE(fc.ok, fc.diagnostics);
  std::string report;
  for (const std::string& line : r.stages[3].summary) report += line + "\n";
  fc = test::filecheck(report, R"(
CHECK: mma.ptx:{{[0-9]+}}:1: moejit_mma_probe: 5 formals match the kernel ABI
CHECK-NEXT: mma.ptx:{{[0-9]+}}:2: moejit_mma_probe: required 'mma.sync.aligned.kind::mxf8f6f4.block_scale' present (8 instruction(s), first at mma.ptx:{{[0-9]+}}:2)
)");
  CHECK_MESSAGE(fc.ok, fc.diagnostics);
}

TEST_CASE("validate: an sm_120a kernel without the block-scaled MMA is rejected, naming the instruction") {
  const std::string expected =
      "lost a required instruction: 'mma.sync.aligned.kind::mxf8f6f4.block_scale' (expected at least 1, found 0)";
  // A kernel whose spec demands the MMA but whose code has none.
  codegen::KernelSpec smoke = codegen::smoke_kernel_spec(test::sm120());
  smoke.required_instructions = {codegen::k_block_scaled_mma};
  ptx::PassError e = test::expect_pass_error([&] { jit::build_kernel(smoke); });
  CHECK(e.pass() == "validate");
  CHECK(e.expected() == 1);
  CHECK(e.found() == 0);
  CHECK(std::string(e.what()).find("entry 'moejit_smoke_mxfp4_dequant' (sm_120a) " + expected) != std::string::npos);
  CHECK(e.locations() == std::vector<std::string>{"moejit_smoke_mxfp4_dequant.ptx:15:1"});
  // The MMA probe after a compiler that dropped the instruction.
  const codegen::KernelSpec spec = codegen::mma_probe_spec(test::sm120());
  const std::string lost = without_lines(test::nvrtc_ptx("mma-probe", test::sm120()), "mma.sync");
  e = test::expect_pass_error([&] { ptx::run_pipeline(lost, "mma.ptx", jit::pass_options(spec)); });
  CHECK(std::string(e.what()).find("entry 'moejit_mma_probe' (sm_120a) " + expected) != std::string::npos);
}

TEST_CASE("validate: an entry with the wrong formal count is rejected, naming the missing or extra formal") {
  const std::string& nvrtc = test::nvrtc_ptx("mma-probe", test::sm120());
  // The ABI declares a sixth formal the PTX does not have.
  codegen::KernelSpec spec = codegen::mma_probe_spec(test::sm120());
  spec.params.push_back({"scale", codegen::ParamType::f32, "float"});
  ptx::PassError e = test::expect_pass_error([&] { ptx::run_pipeline(nvrtc, "mma.ptx", jit::pass_options(spec)); });
  CHECK(e.pass() == "validate");
  CHECK(e.expected() == 6);
  CHECK(e.found() == 5);
  std::string what = e.what();
  CHECK(what.rfind(
            "pass 'validate': entry 'moejit_mma_probe' (sm_120a): formals of the kernel ABI: expected 6, found 5", 0) ==
        0);
  CHECK(what.find("missing formal 5: '.f32 moejit_mma_probe_param_5' (scale (f32))") != std::string::npos);

  // The PTX lost its last formal.
  const std::string last = test::line_with(nvrtc, "moejit_mma_probe_param_4\n") + "\n";
  std::string fewer = test::replace_once(nvrtc, last, "");
  fewer = test::replace_once(fewer, "moejit_mma_probe_param_3,", "moejit_mma_probe_param_3");
  e = test::expect_pass_error(
      [&] { ptx::run_pipeline(fewer, "mma.ptx", jit::pass_options(codegen::mma_probe_spec(test::sm120()))); });
  CHECK(e.expected() == 5);
  CHECK(e.found() == 4);
  CHECK(std::string(e.what()).find("missing formal 4: '.u64 moejit_mma_probe_param_4' (d (ptr))") != std::string::npos);

  // One formal too many in the PTX: the extra one is shown where it is.
  spec = codegen::mma_probe_spec(test::sm120());
  spec.params.pop_back();
  e = test::expect_pass_error([&] { ptx::run_pipeline(nvrtc, "mma.ptx", jit::pass_options(spec)); });
  CHECK(e.found() == 5);
  CHECK(std::string(e.what()).find("note: unexpected formal 4: '.param .u64 .ptr .align 1 moejit_mma_probe_param_4'") !=
        std::string::npos);
}

TEST_CASE("validate: a formal of the wrong type is rejected with both declarations") {
  codegen::KernelSpec spec = codegen::mma_probe_spec(test::sm120());
  spec.params[4].type = codegen::ParamType::u32;
  const ptx::PassError e = test::expect_pass_error(
      [&] { ptx::run_pipeline(test::nvrtc_ptx("mma-probe", test::sm120()), "mma.ptx", jit::pass_options(spec)); });
  CHECK(std::string(e.what()).find("formal 4 is '.param .u64 .ptr .align 1 moejit_mma_probe_param_4', the kernel ABI "
                                   "says '.u32 moejit_mma_probe_param_4' (d (u32))") != std::string::npos);
}

TEST_CASE("validate: the entry must exist exactly once (0 and 2 matches)") {
  ptx::PipelineOptions o;
  o.abi = {{"moejit_nope", std::nullopt, {}, "sm_90a"}};
  ptx::PassError e =
      test::expect_pass_error([&] { ptx::run_pipeline(test::read_fixture("two_kernels.ptx"), "two.ptx", o); });
  CHECK(e.pass() == "validate");
  CHECK(e.expected() == 1);
  CHECK(e.found() == 0);
  CHECK(e.locations() == std::vector<std::string>{"two.ptx:1:1"});
  CHECK(std::string(e.what()).rfind("pass 'validate': entries named 'moejit_nope': expected 1, found 0", 0) == 0);

  const std::string twin =
      test::replace_once(test::read_fixture("two_kernels.ptx"), ".entry consumer(", ".entry producer(");
  o.abi = {{"producer", std::nullopt, {}, "sm_90a"}};
  e = test::expect_pass_error([&] { ptx::run_pipeline(twin, "two.ptx", o); });
  CHECK(e.found() == 2);
  CHECK(e.locations() == std::vector<std::string>{"two.ptx:12:1", "two.ptx:33:1"});
}

TEST_CASE("validate: opcodes match modifier by modifier") {
  CHECK(ptx::opcode_matches("cp.async.bulk.tensor.2d.shared::cluster.global", "cp.async.bulk.tensor"));
  CHECK(ptx::opcode_matches("cp.async.bulk.tensor", "cp.async.bulk.tensor"));
  CHECK(!ptx::opcode_matches("cp.async.bulk.prefetch.tensor.2d.L2.global", "cp.async.bulk.tensor"));
  CHECK(!ptx::opcode_matches("cp.async.bulk.tensorx", "cp.async.bulk.tensor"));
  CHECK(!ptx::opcode_matches("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32", "mma.sync.aligned.kind::mxf8f6f4"));
  CHECK(!ptx::opcode_matches("anything", ""));
}
