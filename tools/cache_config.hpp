#pragma once
// The cache configuration of a command whose job is the disk cache (cache,
// precompile): unlike the library, which keeps kernels in memory when there
// is no cache directory, such a command cannot do what was asked without one.

#include <string>
#include <vector>

#include "cache/config.hpp"

namespace moejit::tools {

// cache::Config::from_env(); throws std::runtime_error naming why there is no
// cache directory (and MOEJIT_CACHE_DIR) when there is none.
cache::Config disk_cache_config();

// Whether the cache directory `root` can be used, as `moejit doctor` reports
// it: it (or, before its first use, the folder it will be made in) must be a
// real directory this process can list and write. Checking writes a temp file
// and removes it; it creates nothing else.
struct CacheDirCheck {
  bool usable = false;
  std::string status;                 // "writable, 3 entries", or what is wrong
  std::vector<std::string> warnings;  // e.g. writable by other users
};
CacheDirCheck check_cache_dir(const std::string& root);

}  // namespace moejit::tools
