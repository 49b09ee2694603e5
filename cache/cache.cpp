#include "cache/cache.hpp"

#include <chrono>
#include <cstdio>
#include <optional>

#include "cache/fs_util.hpp"

namespace moejit::cache {

std::string_view source_name(Source s) {
  switch (s) {
    case Source::memory: return "memory";
    case Source::disk: return "disk";
    case Source::compiled: return "compiled";
  }
  return "?";
}

Cache::Cache(Config config) : config_(std::move(config)), disk_(config_.dir, config_.check) {
  if (config_.dir.empty()) writes_disabled_ = true;
}

Cache::~Cache() {
  try {
    flush_stats();
  } catch (...) {
    // Statistics are never worth failing a process exit for.
  }
}

void Cache::warn(const std::string& message) const {
  if (config_.warn)
    config_.warn(message);
  else
    std::fprintf(stderr, "moejit: warning: %s\n", message.c_str());
}

std::string Cache::disk_problem() const {
  if (config_.dir.empty()) return "no cache directory (" + config_.no_dir_reason + ")";
  std::lock_guard lock(problem_mu_);
  return disk_problem_;
}

void Cache::disk_unusable(const std::string& why) {
  {
    std::lock_guard lock(problem_mu_);
    if (disk_problem_.empty()) disk_problem_ = why;
  }
  writes_disabled_ = true;
  std::call_once(unusable_warned_, [&] {
    warn("the kernel cache at " + config_.dir + " cannot be written (" + why +
         "); kernels built by this process are kept in memory only");
  });
}

void Cache::report_corrupt(std::string_view key, std::string_view summary, const std::string& problem) {
  ++counters_.verify_failures;
  warn("kernel cache entry " + std::string(key.substr(0, 16)) + " (" + std::string(summary) +
       ") failed verification: " + problem + "; removed and rebuilding it");
}

Resolved Cache::resolve(std::string_view key, std::string_view summary, const std::function<Entry()>& build) {
  Loaded found = disk_.load(key);
  if (found.status == LoadStatus::hit) {
    disk_.touch(key);
    ++counters_.disk_hits;
    return {std::move(found.entry), Source::disk};
  }
  if (config_.no_jit) {
    ++counters_.misses;
    std::string msg = "MOEJIT_NO_JIT=1 forbids compiling, and kernel " + std::string(summary) + " (key " +
                      std::string(key) + ") is not in the kernel cache at " + config_.dir;
    if (found.status == LoadStatus::corrupt) msg += " (its entry is damaged: " + found.problem + ")";
    if (found.status == LoadStatus::stale) msg += " (its entry is stale: " + found.problem + ")";
    throw StrictMissError(std::string(key), msg + "; run `moejit precompile` for this configuration first");
  }

  if (config_.dir.empty()) {
    std::call_once(unusable_warned_, [&] {
      warn("no kernel cache directory (" + (config_.no_dir_reason.empty() ? "none configured" : config_.no_dir_reason) +
           "); kernels built by this process are kept in memory only; set MOEJIT_CACHE_DIR to keep them");
    });
  }
  std::optional<FileLock> lock;
  if (!writes_disabled_) {
    std::string error;
    bool unsupported = false;
    lock = disk_.lock(key, &error, &unsupported);
    if (!lock && unsupported) {
      // Publishing stays atomic without the lock; only duplicate compiles become possible.
      std::call_once(no_flock_warned_, [&] {
        warn(error + "; processes sharing this cache may compile the same kernel more than once");
      });
    } else if (!lock) {
      disk_unusable(error);
    }
  }
  if (lock) {
    if (lock->waited()) ++counters_.lock_waits;
    // Whoever held the lock has probably just published this key.
    found = disk_.load(key);
    if (found.status == LoadStatus::hit) {
      disk_.touch(key);
      ++counters_.disk_hits;
      return {std::move(found.entry), Source::disk};
    }
  }
  if (found.status == LoadStatus::corrupt) {
    report_corrupt(key, summary, found.problem);
    disk_.remove(key);
  } else if (found.status == LoadStatus::stale) {
    disk_.remove(key);  // another moejit's entry under this key: replaced, which is no news
  }

  ++counters_.misses;
  const auto t0 = std::chrono::steady_clock::now();
  Resolved built{build(), Source::compiled};
  const double millis = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  counters_.add_compile_time(millis);
  ++counters_.compiles;
  if (config_.info)
    config_.info("compiled " + std::string(summary) + " in " + std::to_string(static_cast<long long>(millis)) +
                 " ms (key " + std::string(key.substr(0, 16)) + ")");
  built.entry.meta = sealed_meta(key, built.entry, fs::now_seconds());
  if (!writes_disabled_) publish(key, built);
  return built;
}

void Cache::publish(std::string_view key, Resolved& built) {
  std::call_once(swept_, [&] { disk_.sweep_stale(); });
  std::string error;
  switch (disk_.publish(key, built.entry, &error)) {
    case PublishStatus::failed:
      ++counters_.publish_failures;
      disk_unusable(error);
      return;
    case PublishStatus::kept_existing:
      // Lost a race with a builder that had no lock (e.g. flock unsupported):
      // use the winner's bytes, so every process runs the same cubin.
      if (Loaded winner = disk_.load(key); winner.status == LoadStatus::hit) built.entry = std::move(winner.entry);
      return;
    case PublishStatus::published:
      if (config_.max_bytes) counters_.evictions += disk_.evict_to(config_.max_bytes, key).size();
      return;
  }
}

void Cache::flush_stats() {
  std::lock_guard lock(stats_mu_);
  const CounterSnapshot now = counters_.snapshot();
  const CounterSnapshot delta = now - flushed_;
  if (delta.empty() || writes_disabled_) return;
  const fs::Dir store = disk_.open(true, nullptr);
  if (store && add_to_stats_file(store, std::string(k_stats_file), delta, nullptr)) flushed_ = now;
}

}  // namespace moejit::cache
