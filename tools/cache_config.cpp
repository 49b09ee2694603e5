#include "tools/cache_config.hpp"

#include <stdexcept>

namespace moejit::tools {

cache::Config disk_cache_config() {
  cache::Config config = cache::Config::from_env();
  if (config.dir.empty())
    throw std::runtime_error("no kernel cache directory: " + config.no_dir_reason +
                             "; set MOEJIT_CACHE_DIR to the directory to use");
  return config;
}

}  // namespace moejit::tools
