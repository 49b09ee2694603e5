#pragma once
// Precompilation, the library half of `moejit precompile` and of the public
// moejit::precompile(): a request (a model, batch sizes, targets, the codegen
// options) becomes the exact set of distinct KernelSpecs its MoE layer can
// need, as the planner plans each shape, and a pool of workers puts each into
// a kernel cache. Batch sizes that share a kernel yield it once. Needs no GPU.

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "codegen/device_profile.hpp"
#include "codegen/kernel_spec.hpp"
#include "codegen/moe_config.hpp"
#include "codegen/moe_launch_plan.hpp"
#include "codegen/target.hpp"
#include "jit/kernel_cache.hpp"

namespace moejit::jit {

struct PrecompileRequest {
  // The model; absent: what codegen emits without a configuration (the smoke kernel).
  std::optional<codegen::MoeConfig> config;
  std::vector<int> batches;  // tokens per rank
  std::vector<codegen::Target> targets;
  codegen::MoeCodegenOptions options;  // the layer options that change kernels
};

// The built-in device profile the planner assumes for `target` on a machine
// without that GPU (h200 for sm_90a, rtx-pro-5000 for sm_120a). Throws
// codegen::ConfigError (field "targets") for a target without one.
codegen::DeviceProfile profile_for(codegen::Target target);

// Every distinct kernel the request can need, in first-seen order. Throws
// codegen::ConfigError for invalid input (a batch beyond the token capacity),
// and std::runtime_error naming the batch, profile and reason for a shape the
// planner rejects (it would never run, so nothing can be precompiled for it).
std::vector<codegen::KernelSpec> kernels_to_precompile(const PrecompileRequest& request);

enum class PrecompileOutcome { compiled, cached, failed };

// Called from the workers, one call at a time (the runner serializes them).
struct PrecompileHooks {
  std::function<void(const codegen::KernelSpec&)> started;
  std::function<void(const codegen::KernelSpec&, PrecompileOutcome, double seconds, const std::string& error)> finished;
};

struct PrecompileResult {
  int compiled = 0, cached = 0, failed = 0;
  std::vector<std::string> errors;  // "<summary>: <what>", one per failed kernel
  std::vector<char> done;           // [i]: specs[i] was built or found
  int workers = 0;
};

// get_or_build() of every spec on `jobs` threads (0: one per core, at most one per spec). A hook that throws
// stops the work (the kernels in progress finish); its exception is rethrown here once every worker is done.
PrecompileResult precompile_kernels(KernelCache& cache, const std::vector<codegen::KernelSpec>& specs, int jobs,
                                    const PrecompileHooks& hooks = {});

// How many of the specs that were built or found (result.done) the disk cache
// does not hold: a fleet that runs with MOEJIT_NO_JIT=1 needs them all kept.
std::size_t kernels_not_kept(KernelCache& cache, const std::vector<codegen::KernelSpec>& specs,
                             const std::vector<char>& done);

}  // namespace moejit::jit
