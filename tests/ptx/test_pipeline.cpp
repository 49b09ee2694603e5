// The pass pipeline inside the build: what each KernelSpec asks of the
// passes, the stages a build keeps, and the result nvJitLink assembles.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "codegen/smoke_kernel.hpp"
#include "codegen/tma_probe_kernel.hpp"
#include "jit/kernel_builder.hpp"
#include "ptx_passes/pipeline.hpp"
#include "tests/ptx/ptx_test_support.hpp"

using namespace moejit;

TEST_CASE("the pipeline runs version, occupancy, tensormap-by-value and validate, in that order") {
  CHECK(ptx::pipeline_pass_names() ==
        std::vector<std::string>{"version", "occupancy", "tensormap-by-value", "validate"});
}

TEST_CASE("build_kernel keeps the PTX after every pass and assembles the last, for every kernel and target") {
  for (const auto& [kernel, target] : test::kernels_on_targets()) {
    CAPTURE(kernel->name);
    CAPTURE(target.name());
    const codegen::KernelSpec spec = kernel->spec(target);
    const jit::BuildArtifacts built = jit::build_kernel(spec);
    REQUIRE(built.stages.size() == 4);
    CHECK(built.ptx == test::nvrtc_ptx(kernel->name, target));
    CHECK(built.final_ptx == built.stages.back().ptx);
    for (size_t i = 0; i < built.stages.size(); ++i) {
      const std::string& before = i == 0 ? built.ptx : built.stages[i - 1].ptx;
      if (built.stages[i].skipped) CHECK(built.stages[i].ptx == before);
    }
    // Only the TMA probe has maps to pass by value; nothing else changes by default.
    const bool maps = kernel->name == "tma-probe";
    CHECK(built.stages[2].skipped == !maps);
    CHECK((built.final_ptx == built.ptx) == !maps);
    REQUIRE(built.cubin.size() > 4);
    CHECK(std::string(built.cubin.data() + 1, 3) == "ELF");
    CHECK(built.resources.find(spec.entry_name()) != nullptr);
  }
}

TEST_CASE("pass_options: what a KernelSpec asks of each pass") {
  codegen::KernelSpec smoke = codegen::smoke_kernel_spec(test::sm90());
  ptx::PipelineOptions o = jit::pass_options(smoke);
  CHECK(o.version.cap == ptx::PtxVersion{9, 0});  // NVRTC and nvJitLink of CUDA 13.0
  CHECK(o.occupancy.empty());
  CHECK(o.tensormaps.empty());
  REQUIRE(o.abi.size() == 1);
  CHECK(o.abi[0].entry == "moejit_smoke_mxfp4_dequant");
  CHECK(o.abi[0].required_instructions.empty());
  REQUIRE(o.abi[0].formals->size() == 4);
  CHECK((*o.abi[0].formals)[3].name == "moejit_smoke_mxfp4_dequant_param_3");
  CHECK((*o.abi[0].formals)[3].type == ".u32");

  smoke.target_blocks_per_sm = 2;
  smoke.max_registers = 96;
  o = jit::pass_options(smoke);
  REQUIRE(o.occupancy.size() == 1);
  CHECK(o.occupancy[0].entry == "moejit_smoke_mxfp4_dequant");
  CHECK(o.occupancy[0].expect_min_ctas == 1);
  CHECK(o.occupancy[0].min_ctas == 2);
  CHECK(o.occupancy[0].max_registers == 96);

  o = jit::pass_options(codegen::tma_probe_spec(test::sm120()));
  REQUIRE(o.tensormaps.size() == 3);
  for (int i = 0; i < 3; ++i) {
    CHECK(o.tensormaps[i].formal == "moejit_tma_probe_param_" + std::to_string(i));
    CHECK(o.tensormaps[i].uses == 2);
    const ptx::ExpectedFormal& f = (*o.abi[0].formals)[i];
    CHECK((f.type == ".b8" && f.align == 128 && f.array_size == 128));
  }
  CHECK(o.abi[0].required_instructions == std::vector<std::string>{"cp.async.bulk.tensor"});
}

TEST_CASE("a planner's co-residency and register cap reach the cubin through the KernelSpec") {
  codegen::KernelSpec spec = codegen::smoke_kernel_spec(test::sm90());
  const int free_registers = jit::build_kernel(spec).resources.find(spec.entry_name())->registers;
  spec.target_blocks_per_sm = 2;
  spec.max_registers = 40;
  REQUIRE(free_registers > 40);
  const jit::BuildArtifacts built = jit::build_kernel(spec);
  CHECK(built.final_ptx.find("\n.minnctapersm 2\n.maxnreg 40\n{") != std::string::npos);
  CHECK(built.resources.find(spec.entry_name())->registers <= 40);
  CHECK(built.stages[1].summary ==
        std::vector<std::string>{"moejit_smoke_mxfp4_dequant.ptx:22:1: moejit_smoke_mxfp4_dequant: "
                                 ".minnctapersm 1 -> 2",
                                 "moejit_smoke_mxfp4_dequant.ptx:22:1: moejit_smoke_mxfp4_dequant: "
                                 ".maxnreg 40 inserted"});
}

TEST_CASE("build_from_ptx: the passes and nvJitLink for PTX from another frontend") {
  ptx::PipelineOptions o;
  o.tensormaps = {{"", "tmap_w", 1}, {"", "tmap_x", 1}};
  o.occupancy = {{"", 1, 2, 64}};
  const jit::BuildArtifacts built =
      jit::build_from_ptx(test::read_fixture("user_tma.ptx"), "user_tma.ptx", test::sm90(), o);
  CHECK(built.stages.size() == 4);
  CHECK(built.final_ptx.find(".param .align 128 .b8 tmap_x[128]") != std::string::npos);
  REQUIRE(built.resources.find("user_tma_load") != nullptr);
  CHECK(built.resources.find("user_tma_load")->registers <= 64);
}

TEST_CASE("the KernelSpec fields the passes read round-trip through JSON") {
  codegen::KernelSpec spec = codegen::tma_probe_spec(test::sm90());
  spec.target_blocks_per_sm = 3;
  spec.max_registers = 128;
  const nlohmann::json j = spec;
  CHECK(j.at("max_registers") == 128);
  CHECK(j.at("target_blocks_per_sm") == 3);
  CHECK(j.at("params").at(0).at("tensormap_uses") == 2);
  CHECK(j.get<codegen::KernelSpec>() == spec);
  codegen::KernelSpec other = spec;
  other.params[1].tensormap_uses = 1;
  CHECK(other != spec);
}

TEST_CASE("the planner's register cap reaches the MoE compute role as .maxnreg") {
  const codegen::KernelSpec spec = test::moe_specs(test::sm90())[0];
  REQUIRE(spec.kernel == "moe_compute");
  REQUIRE(spec.max_registers > 0);  // the launch plan's cap for the planned co-residency
  const ptx::PipelineResult r = ptx::run_pipeline(test::nvrtc_ptx(spec), "moe_compute.ptx", jit::pass_options(spec));
  const std::string cap = ".maxnreg " + std::to_string(spec.max_registers);
  CHECK(r.stages[1].summary.back().find(cap + " inserted") != std::string::npos);
  const test::FileCheckResult fc =
      test::filecheck(r.final_ptx, "CHECK: {{^}}.minnctapersm " + std::to_string(spec.min_blocks_per_sm) +
                                       "{{$}}\nCHECK-NEXT: {{^}}" + cap + "{{$}}\nCHECK-NEXT: {{^}}{{{$}}\n");
  CHECK_MESSAGE(fc.ok, fc.diagnostics);
}
