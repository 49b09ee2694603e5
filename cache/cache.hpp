#pragma once
// The disk layer's policy: look up, else lock, look again, build, publish.
//
// N processes that miss one key serialize on its lock: the first builds and
// publishes, the others wake up to a published entry and load it. A damaged
// entry is a miss: it is reported once (by whoever holds the lock when it is
// found), removed and rebuilt. A directory that cannot be written costs one
// warning; after it the process keeps its kernels in memory only. In strict
// mode a miss is an error that names the key.

#include <atomic>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>

#include "cache/config.hpp"
#include "cache/counters.hpp"
#include "cache/disk_store.hpp"
#include "cache/entry.hpp"

namespace moejit::cache {

inline constexpr std::string_view k_stats_file = "stats.json";  // in the store's folder

enum class Source { memory, disk, compiled };
std::string_view source_name(Source s);  // "memory", "disk", "compiled"

// A miss in strict mode (MOEJIT_NO_JIT=1).
class StrictMissError : public std::runtime_error {
 public:
  StrictMissError(std::string key, const std::string& message) : std::runtime_error(message), key_(std::move(key)) {}
  const std::string& key() const { return key_; }

 private:
  std::string key_;
};

struct Resolved {
  Entry entry;  // files and sealed meta
  Source source = Source::disk;
};

class Cache {
 public:
  explicit Cache(Config config);
  ~Cache();  // flushes the counters into stats.json
  Cache(const Cache&) = delete;
  Cache& operator=(const Cache&) = delete;

  const Config& config() const { return config_; }
  DiskStore& disk() { return disk_; }
  Counters& counters() { return counters_; }
  std::string stats_path() const { return disk_.dir() + "/" + std::string(k_stats_file); }

  // The entry for `key`: from disk, else from build() (then published).
  // `summary` names the kernel in warnings and errors. Throws StrictMissError,
  // or whatever build() throws.
  Resolved resolve(std::string_view key, std::string_view summary, const std::function<Entry()>& build);

  // Whether this process still writes to disk (false after a failed write),
  // and if not, why (the first failure, or why there is no cache directory).
  bool disk_writable() const { return !writes_disabled_.load(); }
  std::string disk_problem() const;

  // Adds what this process counted since the last flush to stats.json.
  void flush_stats();

 private:
  void warn(const std::string& message) const;
  void disk_unusable(const std::string& why);
  void report_corrupt(std::string_view key, std::string_view summary, const std::string& problem);
  void publish(std::string_view key, Resolved& built);

  Config config_;
  DiskStore disk_;
  Counters counters_;
  std::atomic<bool> writes_disabled_{false};
  std::once_flag unusable_warned_, no_flock_warned_, swept_;
  std::mutex stats_mu_;
  mutable std::mutex problem_mu_;
  std::string disk_problem_;
  CounterSnapshot flushed_;
};

}  // namespace moejit::cache
