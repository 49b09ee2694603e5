#pragma once
// How the CLI prints cache figures: sizes, ages, counters.

#include <cstdint>
#include <string>

#include "cache/counters.hpp"

namespace moejit::tools {

std::string format_bytes(std::uint64_t bytes);     // "41.2 KiB"
std::string format_age(std::int64_t seconds_ago);  // "12 s ago", "3 min ago", "2 h ago", "5 d ago"
std::string format_seconds(double seconds);        // "0.42 s", "3 min 12 s"
// "memory_hits=0 disk_hits=2 misses=0 compiles=0 verify_failures=0 ... compile_time=0.00s"
std::string format_counters_line(const cache::CounterSnapshot& c);
// One "name  value" line per counter, for `moejit cache stats`.
std::string format_counters_table(const cache::CounterSnapshot& c);

}  // namespace moejit::tools
