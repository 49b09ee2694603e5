#pragma once
// How a cache behaves: where it lives, how large it may grow, whether it may
// compile at all, and where its warnings go. from_env() reads the variables
// users set; tests build a Config by hand.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "cache/entry.hpp"

namespace moejit::cache {

inline constexpr std::uint64_t k_default_max_bytes = std::uint64_t(1) << 30;  // 1 GiB

using WarnFn = std::function<void(const std::string&)>;

// The environment variables a caller's own setting replaces (Config::from_env leaves them unread).
struct EnvOverrides {
  bool max_bytes = false, no_jit = false;
};

struct Config {
  std::string dir;                                // the cache root (entries live in dir/v1); "": none
  std::string no_dir_reason;                      // why dir is "" (cache_dir.hpp)
  std::uint64_t max_bytes = k_default_max_bytes;  // LRU eviction above this; 0 = no cap
  bool no_jit = false;                            // strict mode: a miss is an error
  WarnFn warn;                                    // empty: "moejit: warning: ..." on stderr
  WarnFn info;                                    // each compile, with its time; empty: silent
  EntryCheck check;                               // empty: checksums only (entry.hpp)

  // MOEJIT_CACHE_DIR / XDG_CACHE_HOME / HOME (cache_dir.hpp), MOEJIT_CACHE_MAX_BYTES,
  // MOEJIT_NO_JIT. Throws std::invalid_argument naming a malformed variable.
  // Without a cache directory, dir is "" and the cache keeps kernels in memory.
  // The variables a caller overrides are not read: a setting that replaces a malformed variable must not fail
  // on it.
  static Config from_env(EnvOverrides overridden = {});
};

// "1073741824", "512M", "512MiB", "1G", "64k": bytes, with binary multiples.
std::optional<std::uint64_t> parse_byte_size(std::string_view text);

// "1", "true", "yes", "on" / "0", "false", "no", "off", "": nullopt otherwise.
std::optional<bool> parse_flag(std::string_view text);

}  // namespace moejit::cache
