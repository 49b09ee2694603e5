#pragma once
// The identity of the compilers that turn a KernelSpec into a cubin. Any
// change here must change every cache key, so it records the exact builds.

#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "codegen/target.hpp"

namespace moejit::codegen {

struct ToolchainVersion {
  int nvrtc_major = 0, nvrtc_minor = 0;
  int nvjitlink_major = 0, nvjitlink_minor = 0;
  // From the header of NVRTC's PTX: "Cuda compilation tools, release 13.0, V13.0.88"
  // and "CL-36424714". Major.minor alone would miss a patch release.
  std::string nvrtc_release;
  std::string nvrtc_build;
  // The same of the ptxas inside nvJitLink, from the note it writes into a cubin: nvJitLink is a library of its
  // own (a wheel or LD_LIBRARY_PATH can bring another patch release beside the same NVRTC), and it makes the SASS.
  std::string nvjitlink_release;

  friend bool operator==(const ToolchainVersion&, const ToolchainVersion&) = default;
};

// The toolchain loaded in this process (probes NVRTC once, then cached).
const ToolchainVersion& toolchain_version();

struct CompilerIdentity {
  ToolchainVersion toolchain;
  Target target;
  std::vector<std::string> nvrtc_options;
  std::vector<std::string> nvjitlink_options;

  friend bool operator==(const CompilerIdentity&, const CompilerIdentity&) = default;
};

// The identity moejit compiles `target` with (the options of nvrtc_compiler/nvjitlink_linker).
CompilerIdentity compiler_identity(Target target);

void to_json(nlohmann::json& j, const ToolchainVersion& v);
void from_json(const nlohmann::json& j, ToolchainVersion& v);
void to_json(nlohmann::json& j, const CompilerIdentity& id);
void from_json(const nlohmann::json& j, CompilerIdentity& id);

}  // namespace moejit::codegen
