#pragma once
// NVRTC: CUDA C++ -> PTX for a virtual target. Never a cubin: the PTX passes
// must see (and may rewrite) every instruction before nvJitLink assembles it.

#include <stdexcept>
#include <string>
#include <vector>

#include "codegen/emit.hpp"
#include "codegen/target.hpp"

namespace moejit::codegen {

class CompileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct PtxResult {
  std::string ptx;
  std::string log;  // NVRTC's program log (warnings), kept even on success
  double millis = 0;
};

// The options moejit always passes for `target` (besides -arch).
std::vector<std::string> nvrtc_options(Target target);

// Compiles `source` for target.virtual_arch(). Throws CompileError with the
// program log when NVRTC rejects it.
PtxResult compile_to_ptx(const EmittedSource& source, Target target);

}  // namespace moejit::codegen
