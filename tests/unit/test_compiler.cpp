// The compile pipeline without a GPU: emit -> NVRTC -> nvJitLink for every target.
#include <doctest/doctest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "codegen/compiler_identity.hpp"
#include "codegen/emit.hpp"
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

TEST_CASE("the PTX of a kernel is the same from any working directory, and names none") {
  // With -lineinfo NVRTC wrote <cwd>/<name> into .file: the same cache key's bytes differed by where they were
  // built, and exported bundles carried the builder's folders.
  const codegen::EmittedSource src = codegen::emit_source(codegen::smoke_kernel_spec(codegen::Target{}));
  const std::filesystem::path here = std::filesystem::current_path();
  std::string ptx[2];
  const std::filesystem::path dirs[2] = {std::filesystem::temp_directory_path(), "/"};
  for (int i = 0; i < 2; ++i) {
    std::filesystem::current_path(dirs[i]);
    ptx[i] = codegen::compile_to_ptx(src, codegen::Target{}).ptx;
  }
  std::filesystem::current_path(here);
  CHECK(ptx[0] == ptx[1]);
  CHECK(ptx[0].find(".file\t1 \"/moejit/moejit_smoke_mxfp4_dequant.cu\"") != std::string::npos);
  CHECK(ptx[0].find(dirs[0].string() + "/") == std::string::npos);
}

TEST_CASE("NVRTC errors carry the program log") {
  codegen::EmittedSource bad{"bad.cu", "extern \"C\" __global__ void k() { undefined_symbol(); }\n", {}};
  CHECK_THROWS_WITH_AS(codegen::compile_to_ptx(bad, codegen::Target{}), doctest::Contains("undefined_symbol"),
                       codegen::CompileError);
}

TEST_CASE("nvJitLink errors carry its error log") {
  const std::string ptx = ".version 9.0\n.target sm_90a\n.address_size 64\n.visible .entry k() { bogus.instr; }\n";
  CHECK_THROWS_WITH_AS(codegen::assemble_cubin(ptx, codegen::Target{}),
                       doctest::Contains("ptx input, line 4; error   : Unknown modifier '.instr'"),
                       codegen::CompileError);
}

TEST_CASE("the compiler identity names the exact toolchain and round-trips through JSON") {
  const codegen::CompilerIdentity id = codegen::compiler_identity(codegen::Target{codegen::Arch::sm_120a});
  CHECK(id.toolchain.nvrtc_major >= 12);
  CHECK(id.toolchain.nvjitlink_major >= 12);
  CHECK(id.toolchain.nvrtc_release.rfind("release ", 0) == 0);
  CHECK(id.toolchain.nvrtc_build.rfind("CL-", 0) == 0);
  CHECK(id.toolchain.nvjitlink_release.rfind("release ", 0) == 0);  // the ptxas inside nvJitLink
  const nlohmann::json j = id;
  CHECK(j.at("target") == "sm_120a");
  CHECK(j.get<codegen::CompilerIdentity>() == id);
  CHECK(codegen::compiler_identity(codegen::Target{codegen::Arch::sm_90a}) != id);
}
