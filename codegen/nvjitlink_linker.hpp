#pragma once
// nvJitLink: (rewritten) PTX -> cubin for a real target, with the resource report.

#include <string>
#include <vector>

#include "codegen/nvrtc_compiler.hpp"
#include "codegen/resource_report.hpp"
#include "codegen/target.hpp"

namespace moejit::codegen {

struct CubinResult {
  std::vector<char> cubin;
  std::string info_log;
  ResourceReport resources;
  double millis = 0;
};

// The options moejit always passes for `target` (besides -arch). -O3 is ptxas's
// default made explicit; -verbose is what fills the resource report.
std::vector<std::string> nvjitlink_options(Target target);

// Assembles `ptx` for target.name(). Throws CompileError (with nvJitLink's error log).
CubinResult assemble_cubin(const std::string& ptx, Target target, const std::string& name = "kernel.ptx");

}  // namespace moejit::codegen
