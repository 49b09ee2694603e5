#include "runtime/kernel_builder.hpp"

#include "codegen/nvjitlink_linker.hpp"
#include "codegen/nvrtc_compiler.hpp"

namespace moejit::runtime {

BuildArtifacts build_kernel(const codegen::KernelSpec& spec) {
  BuildArtifacts a;
  a.spec = spec;
  a.source = codegen::emit_source(spec);
  codegen::PtxResult ptx = codegen::compile_to_ptx(a.source, spec.target);
  a.ptx = std::move(ptx.ptx);
  a.nvrtc_log = std::move(ptx.log);
  a.nvrtc_millis = ptx.millis;
  a.final_ptx = a.ptx;
  codegen::CubinResult cubin = codegen::assemble_cubin(a.final_ptx, spec.target, spec.entry_name() + ".ptx");
  a.cubin = std::move(cubin.cubin);
  a.link_log = std::move(cubin.info_log);
  a.resources = std::move(cubin.resources);
  a.link_millis = cubin.millis;
  return a;
}

}  // namespace moejit::runtime
