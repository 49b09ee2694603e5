#pragma once
// The cache configuration of a command whose job is the disk cache (cache,
// precompile): unlike the library, which keeps kernels in memory when there
// is no cache directory, such a command cannot do what was asked without one.

#include "cache/config.hpp"

namespace moejit::tools {

// cache::Config::from_env(); throws std::runtime_error naming why there is no
// cache directory (and MOEJIT_CACHE_DIR) when there is none.
cache::Config disk_cache_config();

}  // namespace moejit::tools
