#pragma once
// Where the kernel cache lives: $MOEJIT_CACHE_DIR, else $XDG_CACHE_HOME/moejit,
// else ~/.cache/moejit.

#include <string>

namespace moejit::cache {

std::string default_cache_dir();

}  // namespace moejit::cache
