#include "jit/precompile.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <mutex>
#include <nlohmann/json.hpp>
#include <system_error>
#include <thread>
#include <unordered_set>

#include "codegen/moe_kernels.hpp"
#include "codegen/planner.hpp"
#include "codegen/smoke_kernel.hpp"

namespace moejit::jit {
namespace {
// The kernels one (profile, batch) shape needs: the MoE layer's plan for it or,
// with no configuration, what codegen emits on its own (the smoke kernel).
std::vector<codegen::KernelSpec> kernels_for_shape(const codegen::MoeConfig* config,
                                                   const codegen::DeviceProfile& profile, int batch,
                                                   const codegen::MoeCodegenOptions& options) {
  if (!config) return {codegen::smoke_kernel_spec(profile.target)};
  try {
    return codegen::moe_kernel_specs(*config, batch, profile, options);
  } catch (const codegen::PlanError& e) {
    throw std::runtime_error(fmt::format("B = {} cannot be planned on {} ({}): {}; leave it out of the batches", batch,
                                         profile.name, profile.target.name(), e.what()));
  }
}
}  // namespace

codegen::DeviceProfile profile_for(codegen::Target target) {
  for (const std::string& name : codegen::builtin_profile_names())
    if (codegen::DeviceProfile p = codegen::builtin_profile(name); p.target == target) return p;
  throw codegen::ConfigError("targets", fmt::format("no built-in device profile plans for {} (profiles: {})",
                                                    target.name(), fmt::join(codegen::builtin_profile_names(), ", ")));
}

std::vector<codegen::KernelSpec> kernels_to_precompile(const PrecompileRequest& request) {
  if (request.config) {
    codegen::validate(*request.config);
    for (int b : request.batches) codegen::validate_batch(*request.config, b);
  }
  codegen::validate(request.options);
  std::vector<codegen::KernelSpec> out;
  std::unordered_set<std::string> seen;  // by the spec's JSON: equal specs, equal text
  for (codegen::Target target : request.targets) {
    const codegen::DeviceProfile profile = request.config ? profile_for(target) : codegen::DeviceProfile{"", target};
    for (int batch : request.batches)
      for (codegen::KernelSpec& spec :
           kernels_for_shape(request.config ? &*request.config : nullptr, profile, batch, request.options))
        if (seen.insert(nlohmann::json(spec).dump()).second) out.push_back(std::move(spec));
  }
  return out;
}

PrecompileResult precompile_kernels(KernelCache& cache, const std::vector<codegen::KernelSpec>& specs, int jobs,
                                    const PrecompileHooks& hooks) {
  using Clock = std::chrono::steady_clock;
  if (jobs <= 0) jobs = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  PrecompileResult r;
  r.done.assign(specs.size(), 0);
  r.workers = static_cast<int>(std::min<std::size_t>(static_cast<std::size_t>(jobs), specs.size()));
  std::atomic<std::size_t> next{0};
  std::mutex mu;  // the result's counters and errors, and the hooks
  // A hook that throws (a caller's progress callback) must not escape a worker thread, which would terminate
  // the process: the first exception stops the work and is rethrown to the caller once every worker is done.
  std::exception_ptr hook_error;
  auto call_hook = [&](auto&& hook) {
    if (hook_error) return;
    try {
      hook();
    } catch (...) {
      hook_error = std::current_exception();
      next = specs.size();
    }
  };
  auto worker = [&] {
    for (std::size_t i; (i = next.fetch_add(1)) < specs.size();) {
      const codegen::KernelSpec& spec = specs[i];
      if (hooks.started) {
        std::lock_guard lock(mu);
        call_hook([&] { hooks.started(spec); });
      }
      const auto t0 = Clock::now();
      PrecompileOutcome outcome = PrecompileOutcome::failed;
      std::string error;
      try {
        cache::Source source;
        cache.get_or_build(spec, &source);
        outcome = source == cache::Source::compiled ? PrecompileOutcome::compiled : PrecompileOutcome::cached;
      } catch (const std::exception& e) {
        error = e.what();
      }
      const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
      std::lock_guard lock(mu);
      switch (outcome) {
        case PrecompileOutcome::compiled: ++r.compiled; break;
        case PrecompileOutcome::cached: ++r.cached; break;
        case PrecompileOutcome::failed:
          ++r.failed;
          r.errors.push_back(fmt::format("{}: {}", spec.summary(), error));
          break;
      }
      r.done[i] = outcome != PrecompileOutcome::failed;
      if (hooks.finished) call_hook([&] { hooks.finished(spec, outcome, seconds, error); });
    }
  };
  std::vector<std::thread> pool;
  try {
    for (int j = 0; j < r.workers; ++j) pool.emplace_back(worker);
  } catch (const std::system_error&) {
    // No thread for this worker (a process limit, --jobs 1024): the ones started, or this thread, do the work;
    // unwinding past joinable threads would terminate the process.
    r.workers = std::max<int>(1, static_cast<int>(pool.size()));
    if (pool.empty()) worker();
  }
  for (std::thread& t : pool) t.join();
  if (hook_error) std::rethrow_exception(hook_error);
  return r;
}

std::size_t kernels_not_kept(KernelCache& cache, const std::vector<codegen::KernelSpec>& specs,
                             const std::vector<char>& done) {
  std::size_t n = 0;
  for (std::size_t i = 0; i < specs.size(); ++i)
    n += done[i] && !cache.store().disk().contains(cache_key(specs[i])) ? 1 : 0;
  return n;
}

}  // namespace moejit::jit
