// The compile pipeline without a GPU: emit -> NVRTC -> nvJitLink for every target.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "codegen/compiler_identity.hpp"
#include "codegen/nvjitlink_linker.hpp"
#include "codegen/nvrtc_compiler.hpp"
#include "codegen/smoke_kernel.hpp"
#include "jit/kernel_builder.hpp"

using namespace moejit;

TEST_CASE("smoke kernel compiles to PTX and cubin for every target, with a sane resource report") {
  for (codegen::Target target : codegen::all_targets()) {
    CAPTURE(target.name());
    const codegen::KernelSpec spec = codegen::smoke_kernel_spec(target);
    const jit::BuildArtifacts built = jit::build_kernel(spec);
    CHECK(built.ptx.find(".target " + std::string(target.name())) != std::string::npos);
    CHECK(built.ptx.find(".visible .entry " + spec.entry_name()) != std::string::npos);
    // An ELF cubin.
    REQUIRE(built.cubin.size() > 4);
    CHECK(std::string(built.cubin.data() + 1, 3) == "ELF");
    const codegen::KernelResources* res = built.resources.find(spec.entry_name());
    REQUIRE(res != nullptr);
    CHECK(res->registers > 0);
    CHECK(res->registers <= 255);
    CHECK(res->spill_store_bytes == 0);
    CHECK(res->spill_load_bytes == 0);
    CHECK(res->local_bytes == 0);
    CHECK(built.nvrtc_millis > 0);
  }
}

TEST_CASE("NVRTC errors carry the program log") {
  codegen::EmittedSource bad{"bad.cu", "extern \"C\" __global__ void k() { undefined_symbol(); }\n", {}};
  CHECK_THROWS_WITH_AS(codegen::compile_to_ptx(bad, codegen::Target{}), doctest::Contains("undefined_symbol"),
                       codegen::CompileError);
}

TEST_CASE("nvJitLink errors carry its error log") {
  const std::string ptx = ".version 9.0\n.target sm_90a\n.address_size 64\n.visible .entry k() { bogus.instr; }\n";
  CHECK_THROWS_AS(codegen::assemble_cubin(ptx, codegen::Target{}), codegen::CompileError);
}

TEST_CASE("the compiler identity names the exact toolchain and round-trips through JSON") {
  const codegen::CompilerIdentity id = codegen::compiler_identity(codegen::Target{codegen::Arch::sm_120a});
  CHECK(id.toolchain.nvrtc_major >= 12);
  CHECK(id.toolchain.nvjitlink_major >= 12);
  CHECK(id.toolchain.nvrtc_release.rfind("release ", 0) == 0);
  CHECK(id.toolchain.nvrtc_build.rfind("CL-", 0) == 0);
  const nlohmann::json j = id;
  CHECK(j.at("target") == "sm_120a");
  CHECK(j.get<codegen::CompilerIdentity>() == id);
  CHECK(codegen::compiler_identity(codegen::Target{codegen::Arch::sm_90a}) != id);
}
