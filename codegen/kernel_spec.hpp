#pragma once
// KernelSpec: everything that decides the bytes of one emitted kernel. Two
// equal specs emit identical source; the cache keys on its JSON form.
//
// Kernel ABI. Every moejit entry is `extern "C"`, named `moejit_<kernel>`, and
// takes its formals in the order of `params`; NVRTC names formal i
// `<entry>_param_<i>`. Pointers (device buffers) are `.u64` (NVVM 20, for
// compute_100a and later, writes `.u64 .ptr .align 1`). Scalars are
// .u32/.f32/.u64; an `int` formal is `.u32` too.
//
// TensorMaps (ParamType::tensormap) use the same uniform pointer ABI in the
// source: a `const void*` formal that NVRTC declares `.param .u64` and loads
// once with `ld.param.u64`, and whose register reaches the TMA inline asm
// unchanged. The tensormap-by-value PTX pass then makes the formal
// `.param .align 128 .b8 <formal>[128]` and the load a parameter-space address
// (`mov.b64` + `cvta.param.u64`), asserting one load and exactly
// `tensormap_uses` reads of the loaded register. So the cubin takes the
// 128-byte descriptor itself, by value, in the argument vector: the launcher
// passes a CUtensorMap where the source had a pointer. The validate pass
// checks the final formals against this ABI (codegen::ptx_param_type, with
// tensormaps by value) and that `required_instructions` survived.

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
  // A tensormap formal: how many instructions must read its descriptor (e.g. a
  // prefetch and the copy: 2). tensormap-by-value asserts the count. 0 otherwise.
  int tensormap_uses = 0;

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
  int min_blocks_per_sm = 1;  // __launch_bounds__ min blocks: NVRTC writes it as `.minnctapersm`
  // The co-residency the planner wants ptxas to plan for: the occupancy pass
  // rewrites `.minnctapersm min_blocks_per_sm` to it (0: keep min_blocks_per_sm).
  int target_blocks_per_sm = 0;
  // The register cap the occupancy pass pins with `.maxnreg` (0: no cap).
  int max_registers = 0;
  std::vector<KernelParam> params;
  // When set, the device function takes one struct of this type and the entry
  // builds it from its formals with designated initializers (`{.name = name}`),
  // so a formal the struct lacks, renamed or in another order fails to compile.
  std::string params_struct;
  // Contract checks: each (expression, value) becomes
  // `static_assert((expression) == value)` in the emitted entry. The host
  // computes the values (SMEM bytes, threads, workspace layout) from the same
  // templates/moe_contract.cuh the device compiles, so a template edited
  // without the host, or a host planning with other numbers, fails the build.
  std::vector<std::pair<std::string, std::int64_t>> static_checks;
  // PTX instructions the target's kernel must still contain after the passes
  // (e.g. the block-scaled MMA); the validate pass checks them, and adds
  // `cp.async.bulk.tensor` for a kernel with tensormap formals.
  std::vector<std::string> required_instructions;

  std::string entry_name() const { return "moejit_" + kernel; }
  // The PTX name NVRTC gives formal `index`: "<entry>_param_<index>".
  std::string ptx_formal_name(size_t index) const;
  std::int64_t constant(std::string_view name) const;  // throws if absent
  // Every field that decides the bytes, in one line:
  // "moe_compute<kExperts=256,...> threads=192 min_blocks=2 maxnreg=168 fn=moe_compute_sm90_fp8 @ sm_90a"
  // (fn: the device function, where it is not moejit::<kernel>).
  std::string summary() const;

  friend bool operator==(const KernelSpec&, const KernelSpec&) = default;
};

void to_json(nlohmann::json& j, const KernelSpec& s);
void from_json(const nlohmann::json& j, KernelSpec& s);

}  // namespace moejit::codegen
