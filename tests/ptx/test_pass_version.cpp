// `version`: it lowers .version only under its policy, asserts exactly one
// .version directive, and the result assembles.
#include <doctest/doctest.h>

#include "codegen/compiler_identity.hpp"
#include "codegen/nvjitlink_linker.hpp"
#include "ptx_passes/pipeline.hpp"
#include "ptx_passes/unified_diff.hpp"
#include "tests/ptx/ptx_test_support.hpp"

using namespace moejit;
using ptx::PtxVersion;

namespace {
ptx::PipelineOptions version_only(std::optional<PtxVersion> cap, std::string release = "") {
  ptx::PipelineOptions o;
  o.version = {cap, std::move(release)};
  return o;
}
}  // namespace

TEST_CASE("version: under a cap it lowers .version on every kernel and target, and the result assembles") {
  for (const codegen::KernelSpec& spec : test::all_kernel_specs()) {
    CAPTURE(spec.summary());
    const codegen::Target target = spec.target;
    const std::string& in = test::nvrtc_ptx(spec);
    // 8.7 is the first PTX ISA with sm_120a and the block-scaled MMA: every kernel is legal under it.
    const ptx::PipelineResult r = ptx::run_pipeline(in, "k.ptx", version_only(PtxVersion{8, 7}));
    REQUIRE(!r.stages[0].skipped);
    REQUIRE(r.stages[0].summary.size() == 1);
    CHECK(r.stages[0].summary[0] == "k.ptx:9:1: .version 9.0 -> 8.7");
    const test::FileCheckResult fc = test::filecheck(r.final_ptx,
                                                     "CHECK: // Cuda compilation tools, release 13.\n"
                                                     "CHECK: {{^}}.version 8.7{{$}}\n"
                                                     "CHECK-NEXT: {{^}}.target " +
                                                         std::string(target.name()) +
                                                         "{{$}}\n"
                                                         "CHECK-NOT: .version\n");
    CHECK_MESSAGE(fc.ok, fc.diagnostics);
    // Exactly one line changed.
    const std::string diff = ptx::unified_diff(in, r.final_ptx, "a", "b", 0);
    CHECK(diff == "--- a\n+++ b\n@@ -9 +9 @@\n-.version 9.0\n+.version 8.7\n");
    CHECK_NOTHROW(codegen::assemble_cubin(r.final_ptx, target));
  }
}

TEST_CASE("version: keeps the directive's own spacing and only rewrites the number") {
  const std::string in = test::replace_once(test::read_fixture("user_tma.ptx"), ".version 8.0", ".version\t\t8.6");
  const ptx::PipelineResult r = ptx::run_pipeline(in, "user_tma.ptx", version_only(PtxVersion{8, 0}));
  CHECK(r.final_ptx == test::replace_once(in, ".version\t\t8.6", ".version\t\t8.0"));
  CHECK_NOTHROW(codegen::assemble_cubin(r.final_ptx, test::sm90()));
}

TEST_CASE("version: outside its policy the module is untouched, byte for byte") {
  const std::string& in = test::nvrtc_ptx("smoke", test::sm90());
  struct Case {
    ptx::PipelineOptions options;
    std::string reason;
  };
  const Case cases[] = {
      {version_only(std::nullopt), "no version policy"},
      {version_only(PtxVersion{9, 0}), "PTX 9.0 is within the cap 9.0"},
      {version_only(PtxVersion{9, 2}), "PTX 9.0 is within the cap 9.2"},
      // The paper's rule: a rewrite validated for one toolchain release leaves another's PTX alone.
      {version_only(PtxVersion{8, 7}, "13.2"),
       "the policy caps PTX from toolchain release 13.2 at 8.7; this module is from release 13.0"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.reason);
    const ptx::PipelineResult r = ptx::run_pipeline(in, "k.ptx", c.options);
    CHECK(r.stages[0].skipped);
    CHECK(r.stages[0].skip_reason == c.reason);
    CHECK(r.stages[0].ptx == in);
    CHECK(r.final_ptx == in);
  }
  // The same rule for the release that did write the module applies.
  const ptx::PipelineResult r = ptx::run_pipeline(in, "k.ptx", version_only(PtxVersion{8, 7}, "13.0"));
  CHECK(!r.stages[0].skipped);
  CHECK(r.final_ptx.find("\n.version 8.7\n") != std::string::npos);
}

TEST_CASE("version: a module without a .version fails, naming the pass, counts and where it looked") {
  const std::string in = test::replace_once(test::nvrtc_ptx("smoke", test::sm90()), ".version 9.0\n", "");
  const ptx::PassError e = test::expect_pass_error([&] {
    ptx::run_pipeline(in, "k.ptx", version_only(PtxVersion{8, 7}));
  });
  CHECK(e.pass() == "version");
  CHECK(e.expected() == 1);
  CHECK(e.found() == 0);
  CHECK(e.locations() == std::vector<std::string>{"k.ptx:1:1"});
  CHECK(std::string(e.what()).rfind("pass 'version': '.version' directives in the module: expected 1, found 0\n"
                                    "k.ptx:1:1: note: searched here",
                                    0) == 0);
}

TEST_CASE("version: a module with two .version directives fails with both locations") {
  const std::string in =
      test::replace_once(test::nvrtc_ptx("smoke", test::sm90()), ".version 9.0\n", ".version 9.0\n.version 9.0\n");
  const ptx::PassError e = test::expect_pass_error([&] {
    ptx::run_pipeline(in, "k.ptx", version_only(PtxVersion{8, 7}));
  });
  CHECK(e.pass() == "version");
  CHECK(e.expected() == 1);
  CHECK(e.found() == 2);
  CHECK(e.locations() == std::vector<std::string>{"k.ptx:9:1", "k.ptx:10:1"});
  const std::string what = e.what();
  CHECK(what.find("expected 1, found 2") != std::string::npos);
  CHECK(what.find("k.ptx:9:1: note: match 1 of 2") != std::string::npos);
  CHECK(what.find("k.ptx:10:1: note: match 2 of 2") != std::string::npos);
}

TEST_CASE("PTX ISA versions: parsing, order and the toolchain table") {
  CHECK(PtxVersion::parse("9.0") == PtxVersion{9, 0});
  CHECK(PtxVersion::parse("8.10") == PtxVersion{8, 10});
  CHECK(!PtxVersion::parse("9"));
  CHECK(!PtxVersion::parse("9."));
  CHECK(!PtxVersion::parse("a.b"));
  CHECK(!PtxVersion::parse("9.-1"));  // --version-cap 9.-1 wrote `.version 9.-1`
  CHECK(!PtxVersion::parse("-1.0"));
  CHECK(!PtxVersion::parse("+9.0"));
  CHECK(PtxVersion{8, 7} < PtxVersion{8, 10});
  CHECK(ptx::ptx_isa_for_cuda(13, 0) == PtxVersion{9, 0});
  CHECK(ptx::ptx_isa_for_cuda(12, 8) == PtxVersion{8, 7});
  CHECK(ptx::ptx_isa_for_cuda(12, 6) == PtxVersion{8, 5});
  CHECK(ptx::ptx_isa_for_cuda(13, 1) == PtxVersion{9, 1});
  CHECK(!ptx::ptx_isa_for_cuda(99, 0));
  // The nvJitLink this build loads has a row: without one the version pass would cap nothing, silently.
  const codegen::ToolchainVersion& tc = codegen::toolchain_version();
  CHECK_MESSAGE(ptx::ptx_isa_for_cuda(tc.nvjitlink_major, tc.nvjitlink_minor).has_value(),
                "no PTX ISA row for nvJitLink ", tc.nvjitlink_major, ".", tc.nvjitlink_minor,
                " (ptx_passes/ptx_isa.cpp)");
}
