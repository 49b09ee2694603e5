#include "jit/kernel_builder.hpp"

#include <algorithm>
#include <chrono>

#include "codegen/compiler_identity.hpp"
#include "codegen/nvjitlink_linker.hpp"
#include "codegen/nvrtc_compiler.hpp"

namespace moejit::jit {

ptx::VersionPolicy default_version_policy() {
  const codegen::ToolchainVersion& tc = codegen::toolchain_version();
  return {ptx::ptx_isa_for_cuda(tc.nvjitlink_major, tc.nvjitlink_minor), ""};
}

ptx::PipelineOptions pass_options(const codegen::KernelSpec& spec) {
  ptx::PipelineOptions o;
  o.version = default_version_policy();

  const std::string entry = spec.entry_name();
  if (spec.target_blocks_per_sm > 0 || spec.max_registers > 0)
    o.occupancy.push_back({entry, spec.min_blocks_per_sm, spec.target_blocks_per_sm, spec.max_registers});

  ptx::EntryAbi abi;
  abi.entry = entry;
  abi.target = std::string(spec.target.name());
  abi.formals.emplace();
  abi.required_instructions = spec.required_instructions;
  for (size_t i = 0; i < spec.params.size(); ++i) {
    const codegen::KernelParam& p = spec.params[i];
    const std::string role = p.name + " (" + std::string(codegen::param_type_name(p.type)) + ")";
    if (p.type == codegen::ParamType::tensormap) {
      o.tensormaps.push_back({entry, spec.ptx_formal_name(i), p.tensormap_uses});
      abi.formals->push_back({spec.ptx_formal_name(i), ".b8", 128, 128, role});
    } else {
      abi.formals->push_back({spec.ptx_formal_name(i), std::string(codegen::ptx_param_type(p.type)), 0, 0, role});
    }
  }
  const auto& req = abi.required_instructions;
  if (!o.tensormaps.empty() && std::find(req.begin(), req.end(), "cp.async.bulk.tensor") == req.end())
    abi.required_instructions.push_back("cp.async.bulk.tensor");
  o.abi.push_back(std::move(abi));
  return o;
}

std::string ptx_buffer_name(const codegen::KernelSpec& spec) {
  return spec.entry_name() + ".ptx";
}

BuildArtifacts compile_source(const codegen::KernelSpec& spec) {
  BuildArtifacts a;
  a.spec = spec;
  a.source = codegen::emit_source(spec);
  codegen::PtxResult ptx = codegen::compile_to_ptx(a.source, spec.target);
  a.ptx = std::move(ptx.ptx);
  a.nvrtc_log = std::move(ptx.log);
  a.nvrtc_millis = ptx.millis;
  return a;
}

void run_passes(BuildArtifacts& a, const std::string& buffer_name, const ptx::PipelineOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  a.stages.clear();
  ptx::run_pipeline(a.ptx, buffer_name, options, a.stages);
  a.final_ptx = a.stages.empty() ? a.ptx : a.stages.back().ptx;
  a.passes_millis = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

void link(BuildArtifacts& a, const std::string& buffer_name) {
  codegen::CubinResult cubin = codegen::assemble_cubin(a.final_ptx, a.spec.target, buffer_name);
  a.cubin = std::move(cubin.cubin);
  a.link_log = std::move(cubin.info_log);
  a.resources = std::move(cubin.resources);
  a.link_millis = cubin.millis;
}

BuildArtifacts build_kernel(const codegen::KernelSpec& spec) {
  return build_kernel(spec, pass_options(spec));
}

BuildArtifacts build_kernel(const codegen::KernelSpec& spec, const ptx::PipelineOptions& options) {
  BuildArtifacts a = compile_source(spec);
  run_passes(a, ptx_buffer_name(spec), options);
  link(a, ptx_buffer_name(spec));
  return a;
}

BuildArtifacts build_from_ptx(std::string ptx, const std::string& buffer_name, codegen::Target target,
                              const ptx::PipelineOptions& options) {
  BuildArtifacts a;
  a.spec.target = target;
  a.ptx = std::move(ptx);
  run_passes(a, buffer_name, options);
  link(a, buffer_name);
  return a;
}

}  // namespace moejit::jit
