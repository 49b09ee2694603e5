// `occupancy`: .minnctapersm a -> b and a pinned .maxnreg, exactly once per
// entry; ptxas honours the result.
#include <doctest/doctest.h>

#include "codegen/nvjitlink_linker.hpp"
#include "ptx_passes/pipeline.hpp"
#include "tests/ptx/ptx_test_support.hpp"

using namespace moejit;

namespace {
constexpr const char* k_smoke = "moejit_smoke_mxfp4_dequant";

ptx::PipelineOptions occupancy(std::vector<ptx::OccupancyRule> rules) {
  ptx::PipelineOptions o;
  o.occupancy = std::move(rules);
  return o;
}

int registers(const std::string& ptx, codegen::Target target) {
  const codegen::CubinResult c = codegen::assemble_cubin(ptx, target);
  REQUIRE(c.resources.find(k_smoke) != nullptr);
  return c.resources.find(k_smoke)->registers;
}
}  // namespace

TEST_CASE("occupancy: rewrites .minnctapersm and pins .maxnreg on every target, and ptxas obeys the cap") {
  for (codegen::Target target : {test::sm90(), test::sm100(), test::sm120()}) {
    CAPTURE(target.name());
    const std::string& in = test::nvrtc_ptx("smoke", target);
    const ptx::PipelineResult r = ptx::run_pipeline(in, "smoke.ptx", occupancy({{k_smoke, 1, 2, 32}}));
    REQUIRE(!r.stages[1].skipped);
    const test::FileCheckResult fc = test::filecheck(r.final_ptx,
                                                     "CHECK-LABEL: .visible .entry moejit_smoke_mxfp4_dequant(\n"
                                                     "CHECK: {{^}}.maxntid 256{{(, 1, 1)?$}}\n"
                                                     "CHECK-NEXT: {{^}}.minnctapersm 2{{$}}\n"
                                                     "CHECK-NEXT: {{^}}.maxnreg 32{{$}}\n"
                                                     "CHECK-NEXT: {{^}}{{{$}}\n"
                                                     "CHECK-NOT: .minnctapersm\n");
    CHECK_MESSAGE(fc.ok, fc.diagnostics);
    // The cap bites: the kernel wants more than 32 registers without it.
    CHECK(registers(in, target) > 32);
    CHECK(registers(r.final_ptx, target) <= 32);
  }
}

TEST_CASE("occupancy: .minnctapersm alone makes ptxas plan for the co-residency") {
  const std::string& in = test::nvrtc_ptx("smoke", test::sm90());
  const ptx::PipelineResult r = ptx::run_pipeline(in, "smoke.ptx", occupancy({{k_smoke, 1, 8, 0}}));
  CHECK(r.stages[1].summary ==
        std::vector<std::string>{"smoke.ptx:22:1: moejit_smoke_mxfp4_dequant: .minnctapersm 1 -> 8"});
  // 8 CTAs of 256 threads share 64K registers: at most 32 each.
  CHECK(registers(r.final_ptx, test::sm90()) <= 32);
}

TEST_CASE("occupancy: per-entry rules on a module with two entries, and an existing .maxnreg is replaced") {
  const std::string in = test::read_fixture("two_kernels.ptx");
  const ptx::PipelineResult r =
      ptx::run_pipeline(in, "two_kernels.ptx", occupancy({{"producer", 4, 2, 0}, {"consumer", 1, 3, 80}}));
  const test::FileCheckResult fc = test::filecheck(r.final_ptx, test::read_fixture("two_kernels.occupancy.check"));
  CHECK_MESSAGE(fc.ok, fc.diagnostics);
  CHECK_NOTHROW(codegen::assemble_cubin(r.final_ptx, test::sm90()));

  const std::string edge = test::read_fixture("edge_syntax.ptx");
  const ptx::PipelineResult e = ptx::run_pipeline(edge, "edge_syntax.ptx", occupancy({{"edge_one_line", 0, 0, 24}}));
  CHECK(e.stages[1].summary == std::vector<std::string>{"edge_syntax.ptx:32:128: edge_one_line: .maxnreg 40 -> 24"});
  CHECK(e.final_ptx == test::replace_once(edge, ".reqntid 64 .maxnreg 40", ".reqntid 64 .maxnreg 24"));
  CHECK_NOTHROW(codegen::assemble_cubin(e.final_ptx, test::sm90()));
}

TEST_CASE("occupancy: the .minnctapersm found must be the one the source declared") {
  const ptx::PassError e = test::expect_pass_error([] {
    ptx::run_pipeline(test::read_fixture("two_kernels.ptx"), "two_kernels.ptx", occupancy({{"producer", 1, 2, 0}}));
  });
  CHECK(e.pass() == "occupancy");
  CHECK(std::string(e.what()).find("entry 'producer': expected '.minnctapersm 1' (the source's __launch_bounds__), "
                                   "found '.minnctapersm 4'") != std::string::npos);
  CHECK(e.locations() == std::vector<std::string>{"two_kernels.ptx:17:1"});
}

TEST_CASE("occupancy: an entry without .minnctapersm fails, naming the pass, counts and the entry") {
  const std::string in = test::replace_once(test::nvrtc_ptx("smoke", test::sm90()), ".minnctapersm 1\n", "");
  const ptx::PassError e = test::expect_pass_error([&] {
    ptx::run_pipeline(in, "smoke.ptx", occupancy({{k_smoke, 1, 2, 0}}));
  });
  CHECK(e.pass() == "occupancy");
  CHECK(e.expected() == 1);
  CHECK(e.found() == 0);
  CHECK(e.locations() == std::vector<std::string>{"smoke.ptx:15:1"});
  CHECK(std::string(e.what()).rfind("pass 'occupancy': '.minnctapersm' directives in entry "
                                    "'moejit_smoke_mxfp4_dequant': expected 1, found 0",
                                    0) == 0);
}

TEST_CASE("occupancy: two .minnctapersm, or two .maxnreg, fail with both locations") {
  const std::string& nvrtc = test::nvrtc_ptx("smoke", test::sm90());
  const std::string twice = test::replace_once(nvrtc, ".minnctapersm 1\n", ".minnctapersm 1\n.minnctapersm 1\n");
  ptx::PassError e = test::expect_pass_error([&] {
    ptx::run_pipeline(twice, "smoke.ptx", occupancy({{k_smoke, 1, 2, 0}}));
  });
  CHECK(e.pass() == "occupancy");
  CHECK(e.expected() == 1);
  CHECK(e.found() == 2);
  CHECK(e.locations() == std::vector<std::string>{"smoke.ptx:22:1", "smoke.ptx:23:1"});

  const std::string caps =
      test::replace_once(nvrtc, ".minnctapersm 1\n", ".minnctapersm 1\n.maxnreg 40\n.maxnreg 50\n");
  e = test::expect_pass_error([&] { ptx::run_pipeline(caps, "smoke.ptx", occupancy({{k_smoke, 1, 0, 64}})); });
  CHECK(e.found() == 2);
  CHECK(e.locations() == std::vector<std::string>{"smoke.ptx:23:1", "smoke.ptx:24:1"});
  CHECK(std::string(e.what()).find("'.maxnreg' directives in entry 'moejit_smoke_mxfp4_dequant' (at most one): "
                                   "expected 1, found 2") != std::string::npos);
}

TEST_CASE("occupancy: a rule for 'the only entry' on a module with two fails, naming both") {
  const ptx::PassError e = test::expect_pass_error([] {
    ptx::run_pipeline(test::read_fixture("two_kernels.ptx"), "two_kernels.ptx", occupancy({{"", 0, 2, 0}}));
  });
  CHECK(e.found() == 2);
  CHECK(e.locations() == std::vector<std::string>{"two_kernels.ptx:12:1", "two_kernels.ptx:33:1"});
}

TEST_CASE("occupancy: without a target or cap the pass leaves the module alone") {
  const std::string& in = test::nvrtc_ptx("smoke", test::sm90());
  const ptx::PipelineResult r = ptx::run_pipeline(in, "smoke.ptx", occupancy({{k_smoke, 1, 0, 0}}));
  CHECK(r.stages[1].skipped);
  CHECK(r.stages[1].skip_reason == "no co-residency or register cap requested");
  CHECK(r.final_ptx == in);
}
