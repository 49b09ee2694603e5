#include "jit/kernel_cache.hpp"

#include <mutex>
#include <optional>

namespace moejit::jit {

namespace {
cache::Config with_kernel_check(cache::Config config) {
  if (!config.check) config.check = check_kernel_entry;
  return config;
}
}  // namespace

KernelCache::KernelCache(cache::Config config) : cache_(with_kernel_check(std::move(config))) {}

namespace {
std::mutex g_global_mu;
std::optional<cache::Config> g_global_config;
bool g_global_made = false;
}  // namespace

KernelCache& KernelCache::global() {
  static KernelCache instance([] {
    std::lock_guard lock(g_global_mu);
    // In use once its settings are read: an environment that does not parse (MOEJIT_NO_JIT=yes) leaves
    // configure() open to override it, and the next use tries again.
    cache::Config config = g_global_config ? *g_global_config : cache::Config::from_env();
    g_global_made = true;
    return config;
  }());
  return instance;
}

void KernelCache::configure_global(cache::Config config) {
  std::lock_guard lock(g_global_mu);
  if (g_global_made)
    throw std::logic_error("the process-wide kernel cache is already in use; configure it before its first use");
  g_global_config = std::move(config);
}

std::shared_ptr<const CachedKernel> KernelCache::get_or_build(const codegen::KernelSpec& spec, cache::Source* source) {
  if (auto hit = memory_.find(spec)) {
    ++cache_.counters().memory_hits;
    if (source) *source = cache::Source::memory;
    return *hit;
  }
  cache::Source from = cache::Source::memory;
  bool made = false;
  auto kernel = memory_.get_or_make(
      spec,
      [&] {
        const std::string key = cache_key(spec);
        cache::Resolved r = cache_.resolve(key, spec.summary(), [&] { return to_entry(build_for_cache(spec, key)); });
        from = r.source;
        return std::make_shared<const CachedKernel>(from_entry(key, r.entry));
      },
      &made);
  // Another thread of this process was already fetching it: that is a memory hit.
  if (!made) ++cache_.counters().memory_hits;
  if (source) *source = from;
  return kernel;
}

}  // namespace moejit::jit
