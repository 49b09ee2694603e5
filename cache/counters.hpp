#pragma once
// What the cache did: per process (atomic counters, readable any time) and,
// summed over every process that used a cache directory, in its stats.json.

#include <atomic>
#include <cstdint>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "cache/fs_util.hpp"

namespace moejit::cache {

struct CounterSnapshot {
  std::uint64_t memory_hits = 0;
  std::uint64_t disk_hits = 0;        // loaded and verified from disk
  std::uint64_t misses = 0;           // in neither layer: compiled, or an error in strict mode
  std::uint64_t compiles = 0;         // builds this process ran
  std::uint64_t verify_failures = 0;  // entries whose files disagreed with meta.json
  std::uint64_t lock_waits = 0;       // lookups that waited for another builder of their key
  std::uint64_t publish_failures = 0;
  std::uint64_t evictions = 0;
  double compile_millis = 0;

  CounterSnapshot& operator+=(const CounterSnapshot& o);
  CounterSnapshot operator-(const CounterSnapshot& o) const;
  bool empty() const;
  friend bool operator==(const CounterSnapshot&, const CounterSnapshot&) = default;
};

void to_json(nlohmann::json& j, const CounterSnapshot& s);
void from_json(const nlohmann::json& j, CounterSnapshot& s);

class Counters {
 public:
  std::atomic<std::uint64_t> memory_hits{0}, disk_hits{0}, misses{0}, compiles{0}, verify_failures{0}, lock_waits{0},
      publish_failures{0}, evictions{0};
  void add_compile_time(double millis);
  CounterSnapshot snapshot() const;

 private:
  std::atomic<std::uint64_t> compile_micros_{0};
};

// The totals file is small; a larger one is damage, and the totals restart.
inline constexpr std::uint64_t k_max_stats_bytes = 64 << 10;

// Adds `delta` to the totals in `name` in `dir` (created if absent), under
// flock on the file itself, so concurrent processes never lose each other's
// counts. Nothing is written through a link: a link, FIFO or device under
// that name is unlinked and a regular file made in its place.
bool add_to_stats_file(const fs::Dir& dir, const std::string& name, const CounterSnapshot& delta, std::string* error);
// The totals in `name`; zeros when it is absent, and zeros with *error when
// it cannot be read as a regular file.
CounterSnapshot read_stats_file(const fs::Dir& dir, const std::string& name, std::string* error = nullptr);

// The same at `path` (links in its folder's path are followed).
bool add_to_stats_file(const std::string& path, const CounterSnapshot& delta, std::string* error);
CounterSnapshot read_stats_file(const std::string& path, std::string* error = nullptr);

}  // namespace moejit::cache
