#pragma once
// PTX ISA versions, and which one each CUDA toolchain release reads.

#include <optional>
#include <string>
#include <string_view>

namespace moejit::ptx {

struct PtxVersion {
  int major = 0, minor = 0;

  // "9.0" -> {9, 0}; nullopt unless the text is exactly MAJOR.MINOR.
  static std::optional<PtxVersion> parse(std::string_view text);
  std::string str() const;  // "9.0"

  friend auto operator<=>(const PtxVersion&, const PtxVersion&) = default;
};

// The newest PTX ISA a CUDA release's tools (ptxas, nvJitLink, the driver's
// JIT) accept: 12.8 -> 8.7, 13.0 -> 9.0. nullopt for a release this table
// does not know, so a caller never guesses a cap.
std::optional<PtxVersion> ptx_isa_for_cuda(int cuda_major, int cuda_minor);

}  // namespace moejit::ptx
