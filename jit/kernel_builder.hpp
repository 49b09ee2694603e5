#pragma once
// The build pipeline for one KernelSpec, top to bottom:
//   emit (codegen) -> NVRTC -> PTX passes -> nvJitLink.
// Every stage's artifact is kept, so `moejit inspect` and the cache can show
// and store all of them. No driver call happens here.

#include <string>
#include <vector>

#include "codegen/emit.hpp"
#include "codegen/kernel_spec.hpp"
#include "codegen/resource_report.hpp"
#include "ptx_passes/pipeline.hpp"

namespace moejit::jit {

struct BuildArtifacts {
  codegen::KernelSpec spec;
  codegen::EmittedSource source;
  std::string nvrtc_log;
  std::string ptx;                     // as NVRTC emitted it
  std::vector<ptx::PassStage> stages;  // the PTX after each pass, in pipeline order
  std::string final_ptx;               // after the PTX passes: what nvJitLink assembled
  std::vector<char> cubin;
  std::string link_log;
  codegen::ResourceReport resources;
  double nvrtc_millis = 0, passes_millis = 0, link_millis = 0;
};

// What the PTX passes do for `spec`:
// - version: cap `.version` at the newest PTX ISA the loaded nvJitLink reads
//   (a no-op while NVRTC and nvJitLink come from one release);
// - occupancy: `.minnctapersm min_blocks_per_sm -> target_blocks_per_sm` and
//   `.maxnreg max_registers`, when set;
// - tensormap-by-value: every tensormap formal, with its tensormap_uses;
// - validate: the formals of the kernel ABI (tensormaps by value) and the
//   required instructions, plus `cp.async.bulk.tensor` when it has tensormaps.
ptx::PipelineOptions pass_options(const codegen::KernelSpec& spec);

// The version policy every build uses: cap at the PTX ISA of the loaded
// nvJitLink (nothing to do while NVRTC and nvJitLink are one release; it
// matters when an older nvJitLink assembles a newer NVRTC's PTX).
ptx::VersionPolicy default_version_policy();

// The PTX name of the buffer the passes and nvJitLink see: "<entry>.ptx".
std::string ptx_buffer_name(const codegen::KernelSpec& spec);

// Throws codegen::CompileError (NVRTC, nvJitLink), ptx::ParseError or ptx::PassError.
BuildArtifacts build_kernel(const codegen::KernelSpec& spec);
// The same with the pass options given (`moejit inspect` overrides them).
BuildArtifacts build_kernel(const codegen::KernelSpec& spec, const ptx::PipelineOptions& options);

// The back half of the pipeline for PTX from anywhere (another frontend, a
// file): the passes, then nvJitLink for `target`. `spec` and `source` stay empty.
BuildArtifacts build_from_ptx(std::string ptx, const std::string& buffer_name, codegen::Target target,
                              const ptx::PipelineOptions& options);

// The stages of a build one at a time, for callers that show what they have
// when a later stage fails (`moejit inspect`). build_kernel is
// compile_source, run_passes, link.
BuildArtifacts compile_source(const codegen::KernelSpec& spec);  // emit + NVRTC
// a.ptx -> a.stages, a.final_ptx. A stage is in a.stages as soon as it is done.
void run_passes(BuildArtifacts& a, const std::string& buffer_name, const ptx::PipelineOptions& options);
// a.final_ptx -> a.cubin, a.link_log, a.resources, for a.spec.target.
void link(BuildArtifacts& a, const std::string& buffer_name);

}  // namespace moejit::jit
