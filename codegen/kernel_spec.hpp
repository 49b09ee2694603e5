#pragma once
// KernelSpec: everything that decides the bytes of one emitted kernel. Two
// equal specs emit identical source; the cache keys on its JSON form.
//
// Kernel ABI. Every moejit entry is `extern "C"`, named `moejit_<kernel>`, and
// takes its formals in the order of `params`. Pointers (device buffers) are
// `.u64`. A TensorMap is declared in the source as a `const void*` pointer
// formal (so NVRTC emits `.param .u64`), and the tensormap-by-value PTX pass
// turns it into `.param .align 128 .b8 name[128]`; the launcher passes the
// 128-byte descriptor itself. Scalars are .u32/.s32/.f32/.u64.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "codegen/target.hpp"

namespace moejit::codegen {

enum class ParamType { ptr, u32, s32, f32, u64, tensormap };

std::string_view param_type_name(ParamType t);  // "ptr", "u32", ...
std::string_view ptx_param_type(ParamType t);   // as NVRTC declares it: ".u64", ".u32", ...

struct KernelParam {
  std::string name;  // the source name; in PTX the formal is `<entry>_param_<index>`
  ParamType type = ParamType::ptr;
  std::string cxx_type;  // the declaration in the emitted entry, e.g. "const unsigned char*"

  friend bool operator==(const KernelParam&, const KernelParam&) = default;
};

struct KernelSpec {
  std::string kernel;           // family, e.g. "smoke_mxfp4_dequant"
  std::string template_file;    // the .cuh that defines the device function
  std::string device_function;  // qualified name of the templated device function
  Target target;
  // Compile-time constants, in template-argument order.
  std::vector<std::pair<std::string, std::int64_t>> constants;
  int threads = 128;          // __launch_bounds__ max threads
  int min_blocks_per_sm = 1;  // __launch_bounds__ min blocks (the occupancy pass may rewrite)
  std::vector<KernelParam> params;
  // PTX instructions the target's kernel must still contain after the passes
  // (e.g. the block-scaled MMA); the validate pass checks them.
  std::vector<std::string> required_instructions;

  std::string entry_name() const { return "moejit_" + kernel; }
  // The PTX name NVRTC gives formal `index`: "<entry>_param_<index>".
  std::string ptx_formal_name(size_t index) const;
  std::int64_t constant(std::string_view name) const;  // throws if absent
  std::string summary() const;                         // "smoke_mxfp4_dequant<kThreads=256> @ sm_90a"

  friend bool operator==(const KernelSpec&, const KernelSpec&) = default;
};

void to_json(nlohmann::json& j, const KernelSpec& s);
void from_json(const nlohmann::json& j, KernelSpec& s);

}  // namespace moejit::codegen
