#pragma once
// Source emission: a KernelSpec becomes one CUDA C++ translation unit that
// includes its template and defines the `extern "C"` entry with the spec's ABI.

#include <string>
#include <vector>

#include "codegen/kernel_spec.hpp"

namespace moejit::codegen {

struct EmittedSource {
  std::string name;  // NVRTC program name, e.g. "moejit_smoke_mxfp4_dequant.cu"
  std::string text;
  // The in-memory headers NVRTC needs: the spec's template and its includes.
  std::vector<std::pair<std::string, std::string>> headers;
};

EmittedSource emit_source(const KernelSpec& spec);

}  // namespace moejit::codegen
