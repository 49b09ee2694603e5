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

namespace moejit::runtime {

struct BuildArtifacts {
  codegen::KernelSpec spec;
  codegen::EmittedSource source;
  std::string nvrtc_log;
  std::string ptx;        // as NVRTC emitted it
  std::string final_ptx;  // after the PTX passes
  std::vector<char> cubin;
  std::string link_log;
  codegen::ResourceReport resources;
  double nvrtc_millis = 0, passes_millis = 0, link_millis = 0;
};

BuildArtifacts build_kernel(const codegen::KernelSpec& spec);

}  // namespace moejit::runtime
