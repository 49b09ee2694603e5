// `tensormap-by-value`: TensorMap formals become 128-byte by-value formals
// addressed in the parameter space; one load per map and the stated number of
// reads are asserted; nvJitLink assembles the result.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include "codegen/nvjitlink_linker.hpp"
#include "codegen/tma_probe_kernel.hpp"
#include "jit/kernel_builder.hpp"
#include "ptx_passes/operands.hpp"
#include "ptx_passes/pipeline.hpp"
#include "tests/ptx/ptx_test_support.hpp"

using namespace moejit;

namespace {
constexpr const char* k_entry = "moejit_tma_probe";

std::string formal(int i) {
  return fmt::format("{}_param_{}", k_entry, i);
}

// "[<formal>]": how a load names it. (fmt, not operator+: GCC 12 warns falsely there.)
std::string operand(int i) {
  return fmt::format("[{}]", formal(i));
}

std::string at_line(int line) {
  return fmt::format("tma.ptx:{}:2", line);
}

ptx::PipelineOptions probe_maps(int uses = codegen::k_tma_probe_map_uses) {
  ptx::PipelineOptions o;
  for (int i = 0; i < 3; ++i) o.tensormaps.push_back({k_entry, formal(i), uses});
  return o;
}

// The by-value formals, one parameter-space address per map right where its
// load was, and each map's two reads (prefetch, copy) through that register.
constexpr const char* k_probe_checks = R"(
CHECK-LABEL: .visible .entry moejit_tma_probe(
CHECK-NEXT: {{^}}	.param .align 128 .b8 moejit_tma_probe_param_0[128],{{$}}
CHECK-NEXT: {{^}}	.param .align 128 .b8 moejit_tma_probe_param_1[128],{{$}}
CHECK-NEXT: {{^}}	.param .align 128 .b8 moejit_tma_probe_param_2[128],{{$}}
CHECK-NEXT: {{^}}	.param .u64 {{(.ptr .align 1 )?}}moejit_tma_probe_param_3,{{$}}
CHECK-NOT: [moejit_tma_probe_param_{{[012]}}]
CHECK: mov.b64 [[A:%rd[0-9]+]], moejit_tma_probe_param_0;
CHECK-NEXT: cvta.param.u64 [[A]], [[A]];
CHECK-NEXT: mov.b64 [[B:%rd[0-9]+]], moejit_tma_probe_param_1;
CHECK-NEXT: cvta.param.u64 [[B]], [[B]];
CHECK-NEXT: mov.b64 [[C:%rd[0-9]+]], moejit_tma_probe_param_2;
CHECK-NEXT: cvta.param.u64 [[C]], [[C]];
CHECK-NEXT: ld.param.u64 {{%rd[0-9]+}}, [moejit_tma_probe_param_3];
CHECK: prefetch.tensormap {{\[}}[[A]]];
CHECK: cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [{{%r[0-9]+}}], {{\[}}[[A]], {
CHECK: prefetch.tensormap {{\[}}[[B]]];
CHECK: cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [{{%r[0-9]+}}], {{\[}}[[B]], {
CHECK: prefetch.tensormap {{\[}}[[C]]];
CHECK: cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [{{%r[0-9]+}}], {{\[}}[[C]], {
)";
}  // namespace

TEST_CASE("tensormap-by-value: three maps by value on sm_90a, sm_100a and sm_120a; nvJitLink assembles them") {
  for (codegen::Target target : {test::sm90(), test::sm100(), test::sm120()}) {
    CAPTURE(target.name());
    const ptx::PipelineResult r = ptx::run_pipeline(test::nvrtc_ptx("tma-probe", target), "tma.ptx", probe_maps());
    REQUIRE(!r.stages[2].skipped);
    CHECK(r.stages[2].summary.size() == 9);  // per map: the formal, the load, the reads
    const test::FileCheckResult fc = test::filecheck(r.final_ptx, k_probe_checks);
    CHECK_MESSAGE(fc.ok, fc.diagnostics);
    const codegen::CubinResult cubin = codegen::assemble_cubin(r.final_ptx, target);
    REQUIRE(cubin.resources.find(k_entry) != nullptr);
    CHECK(cubin.resources.find(k_entry)->spill_store_bytes == 0);
  }
}

TEST_CASE("tensormap-by-value: the MoE compute role's weight maps go by value on every target and assemble") {
  for (codegen::Target target : {test::sm90(), test::sm120()}) {
    CAPTURE(target.name());
    const codegen::KernelSpec spec = test::moe_specs(target)[0];
    REQUIRE(spec.kernel == "moe_compute");
    jit::BuildArtifacts a;
    a.spec = spec;
    a.ptx = test::nvrtc_ptx(spec);
    jit::run_passes(a, "moe_compute.ptx", jit::pass_options(spec));
    // Each map (formals 4 and 5): its prefetch, and the select of the phase's map (GEMM1 or GEMM2).
    const test::FileCheckResult fc = test::filecheck(a.final_ptx, R"(
CHECK-LABEL: .visible .entry moejit_moe_compute(
CHECK: {{^}}	.param .align 128 .b8 moejit_moe_compute_param_4[128],{{$}}
CHECK-NEXT: {{^}}	.param .align 128 .b8 moejit_moe_compute_param_5[128],{{$}}
CHECK: mov.b64 [[W1:%rd[0-9]+]], moejit_moe_compute_param_4;
CHECK-NEXT: cvta.param.u64 [[W1]], [[W1]];
CHECK: mov.b64 [[W2:%rd[0-9]+]], moejit_moe_compute_param_5;
CHECK-NEXT: cvta.param.u64 [[W2]], [[W2]];
CHECK: prefetch.tensormap {{\[}}[[W1]]];
CHECK: prefetch.tensormap {{\[}}[[W2]]];
CHECK: cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes
)");
    CHECK_MESSAGE(fc.ok, fc.diagnostics);
    // The second read of each map: one selp picks between the two parameter-space addresses.
    const ptx::Module m = ptx::Module::parse(a.final_ptx, "moe_compute.ptx");
    const auto reg_of = [&](const std::string& formal) {
      for (const ptx::Statement& st : m.entries()[0].body)
        if (st.opcode() == "mov.b64" && ptx::count_token(st.text, formal) == 1)
          return ptx::split_operands(st.operands())[0].str();
      return std::string();
    };
    const std::string w1 = reg_of("moejit_moe_compute_param_4"), w2 = reg_of("moejit_moe_compute_param_5");
    REQUIRE((!w1.empty() && !w2.empty()));
    int selects = 0;
    for (const ptx::Statement& st : m.entries()[0].body)
      selects += st.opcode() == "selp.b64" && ptx::count_token(st.text, w1) == 1 && ptx::count_token(st.text, w2) == 1;
    CHECK(selects == 1);
    jit::link(a, "moe_compute.ptx");
    REQUIRE(a.resources.find(spec.entry_name()) != nullptr);
    CHECK(a.resources.find(spec.entry_name())->spill_store_bytes == 0);
  }
}

TEST_CASE("tensormap-by-value: the same FileCheck patterns reject the pointer-ABI PTX NVRTC wrote") {
  const test::FileCheckResult fc = test::filecheck(test::nvrtc_ptx("tma-probe", test::sm90()), k_probe_checks);
  CHECK(!fc.ok);
  CHECK(fc.diagnostics.find("error") != std::string::npos);
}

TEST_CASE("tensormap-by-value: a user's PTX with named formals, one read per map") {
  ptx::PipelineOptions o;
  o.tensormaps = {{"", "tmap_w", 1}, {"", "tmap_x", 1}};
  const ptx::PipelineResult r = ptx::run_pipeline(test::read_fixture("user_tma.ptx"), "user_tma.ptx", o);
  const test::FileCheckResult fc = test::filecheck(r.final_ptx, test::read_fixture("user_tma.tensormap.check"));
  CHECK_MESSAGE(fc.ok, fc.diagnostics);
  CHECK_NOTHROW(codegen::assemble_cubin(r.final_ptx, test::sm90()));
}

TEST_CASE("tensormap-by-value: a map loaded twice is rejected with both loads") {
  const std::string& nvrtc = test::nvrtc_ptx("tma-probe", test::sm90());
  const std::string load = test::line_with(nvrtc, operand(1));
  const std::string in = test::replace_once(nvrtc, load + "\n", load + "\n" + load + "\n");
  const ptx::PassError e = test::expect_pass_error([&] { ptx::run_pipeline(in, "tma.ptx", probe_maps()); });
  CHECK(e.pass() == "tensormap-by-value");
  CHECK(e.expected() == 1);
  CHECK(e.found() == 2);
  const int line = test::line_of(nvrtc, load);
  CHECK(e.locations() == std::vector<std::string>{at_line(line), at_line(line + 1)});
  CHECK(std::string(e.what()).rfind("pass 'tensormap-by-value': loads of TensorMap formal 'moejit_tma_probe_param_1' "
                                    "(ld.param.u64 %rd, [moejit_tma_probe_param_1]): expected 1, found 2",
                                    0) == 0);
}

TEST_CASE("tensormap-by-value: a map never loaded is rejected at its formal") {
  const std::string& nvrtc = test::nvrtc_ptx("tma-probe", test::sm90());
  const std::string in = test::replace_once(nvrtc, test::line_with(nvrtc, operand(0)) + "\n", "");
  const ptx::PassError e = test::expect_pass_error([&] { ptx::run_pipeline(in, "tma.ptx", probe_maps()); });
  CHECK(e.expected() == 1);
  CHECK(e.found() == 0);
  CHECK(e.locations() == std::vector<std::string>{"tma.ptx:18:2"});  // the formal's declaration
}

TEST_CASE("tensormap-by-value: a map read an unexpected number of times is rejected with every read") {
  const std::string& nvrtc = test::nvrtc_ptx("tma-probe", test::sm90());
  // Fewer reads than declared: the compiler lost the prefetch of map b.
  const std::string prefetch_b = test::line_with(nvrtc, "prefetch.tensormap [%rd3]");
  const std::string fewer = test::replace_once(nvrtc, prefetch_b + "\n", "");
  ptx::PassError e = test::expect_pass_error([&] { ptx::run_pipeline(fewer, "tma.ptx", probe_maps()); });
  CHECK(e.pass() == "tensormap-by-value");
  CHECK(e.expected() == 2);
  CHECK(e.found() == 1);
  CHECK(std::string(e.what()).rfind(
            "pass 'tensormap-by-value': instructions reading %rd3 (TensorMap 'moejit_tma_probe_param_1'): "
            "expected 2, found 1",
            0) == 0);
  // More reads than declared: each of the two is listed.
  e = test::expect_pass_error([&] { ptx::run_pipeline(nvrtc, "tma.ptx", probe_maps(1)); });
  CHECK(e.expected() == 1);
  CHECK(e.found() == 2);
  const std::string copy_a = test::line_with(nvrtc, "[%rd2, {");
  CHECK(e.locations() == std::vector<std::string>{at_line(test::line_of(nvrtc, "prefetch.tensormap [%rd2]")),
                                                  at_line(test::line_of(nvrtc, copy_a))});
}

TEST_CASE("tensormap-by-value: a formal that is not there, or not a pointer, is rejected") {
  ptx::PipelineOptions o;
  o.tensormaps = {{"", "tmap_nope", 1}};
  ptx::PassError e =
      test::expect_pass_error([&] { ptx::run_pipeline(test::read_fixture("user_tma.ptx"), "user_tma.ptx", o); });
  CHECK(e.found() == 0);
  CHECK(std::string(e.what()).find("formals named 'tmap_nope' in entry 'user_tma_load': expected 1, found 0") !=
        std::string::npos);
  // Running the pass over its own output: the formal is already by value.
  o.tensormaps = {{"", "tmap_w", 1}};
  const std::string once = ptx::run_pipeline(test::read_fixture("user_tma.ptx"), "user_tma.ptx", o).final_ptx;
  e = test::expect_pass_error([&] { ptx::run_pipeline(once, "user_tma.ptx", o); });
  CHECK(std::string(e.what()).find("TensorMap formal 'tmap_w' is declared '.align 128 .b8 [128]', not the .u64 "
                                   "pointer of the kernel ABI") != std::string::npos);
}

TEST_CASE("tensormap-by-value: a map the kernel reads as global memory is refused") {
  ptx::PipelineOptions o;
  o.tensormaps = {{"", "cast_map_param_0", 2}};
  const ptx::PassError e = test::expect_pass_error(
      [&] { ptx::run_pipeline(test::read_fixture("tma_global_cast.ptx"), "tma_global_cast.ptx", o); });
  CHECK(std::string(e.what()).find("%rd1 (TensorMap 'cast_map_param_0') is converted to a global address") !=
        std::string::npos);
  CHECK(e.locations() == std::vector<std::string>{"tma_global_cast.ptx:24:2"});
}

TEST_CASE("tensormap-by-value: a map register written again, or PTX older than 7.7, is refused") {
  const std::string user = test::read_fixture("user_tma.ptx");
  ptx::PipelineOptions o;
  o.tensormaps = {{"", "tmap_w", 1}};
  const std::string overwritten =
      test::replace_once(user, "\tld.param.u64 \t%rd3, [out];", "\tld.param.u64 \t%rd3, [out];\n\tmov.b64 %rd1, 0;");
  ptx::PassError e = test::expect_pass_error([&] { ptx::run_pipeline(overwritten, "u.ptx", o); });
  CHECK(std::string(e.what()).find("%rd1 (TensorMap 'tmap_w') is written again after its load") != std::string::npos);

  const std::string old = test::replace_once(user, ".version 8.0", ".version 7.6");
  e = test::expect_pass_error([&] { ptx::run_pipeline(old, "u.ptx", o); });
  CHECK(std::string(e.what()).find("the module is PTX 7.6; a kernel parameter's generic address (cvta.param) needs "
                                   "PTX 7.7") != std::string::npos);
}
