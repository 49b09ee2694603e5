#include "tools/cache_format.hpp"

#include <fmt/format.h>

namespace moejit::tools {

std::string format_bytes(std::uint64_t bytes) {
  if (bytes < 1024) return fmt::format("{} B", bytes);
  const char* units[] = {"KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes) / 1024.0;
  int u = 0;
  while (v >= 1024.0 && u < 3) v /= 1024.0, ++u;
  return fmt::format("{:.1f} {}", v, units[u]);
}

std::string format_age(std::int64_t s) {
  if (s < 0) s = 0;
  if (s < 120) return fmt::format("{} s ago", s);
  if (s < 7200) return fmt::format("{} min ago", s / 60);
  if (s < 2 * 86400) return fmt::format("{} h ago", s / 3600);
  return fmt::format("{} d ago", s / 86400);
}

std::string format_seconds(double s) {
  if (s < 120) return fmt::format("{:.2f} s", s);
  // The time comes from stats.json, which anyone who can write the cache can write: past 1e15 s (or NaN) the cast
  // below would be undefined.
  if (!(s < 1e15)) return fmt::format("{:.3g} s", s);
  const auto whole = static_cast<long long>(s);
  return fmt::format("{} min {} s", whole / 60, whole % 60);
}

std::string format_counters_line(const cache::CounterSnapshot& c) {
  return fmt::format(
      "memory_hits={} disk_hits={} misses={} compiles={} verify_failures={} lock_waits={} publish_failures={} "
      "evictions={} compile_time={:.3f}s",
      c.memory_hits, c.disk_hits, c.misses, c.compiles, c.verify_failures, c.lock_waits, c.publish_failures,
      c.evictions, c.compile_millis / 1000.0);
}

std::string format_counters_table(const cache::CounterSnapshot& c) {
  return fmt::format(
      "  memory hits       {}\n"
      "  disk hits         {}\n"
      "  misses            {}\n"
      "  compiles          {}\n"
      "  compile time      {}\n"
      "  verify failures   {}\n"
      "  lock waits        {}\n"
      "  publish failures  {}\n"
      "  evictions         {}\n",
      c.memory_hits, c.disk_hits, c.misses, c.compiles, format_seconds(c.compile_millis / 1000.0), c.verify_failures,
      c.lock_waits, c.publish_failures, c.evictions);
}

}  // namespace moejit::tools
