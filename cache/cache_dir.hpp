#pragma once
// Where the kernel cache lives: $MOEJIT_CACHE_DIR, else $XDG_CACHE_HOME/moejit
// (an absolute XDG_CACHE_HOME only, as the XDG base-directory spec asks), else
// $HOME/.cache/moejit, else the passwd entry's home.
//
// There is deliberately no shared fallback: a world-writable place such as
// /tmp/.cache would let any local user plant the kernels this one runs.
// Without a home (a container with an arbitrary uid and no HOME) the answer is
// "none", and the cache keeps kernels in memory only until MOEJIT_CACHE_DIR
// names a directory.

#include <string>

namespace moejit::cache {

struct CacheDirInputs {
  std::string moejit_cache_dir, xdg_cache_home, home;  // the variables ("" when unset)
  std::string passwd_home;                             // the passwd entry's home ("" when there is none)
  unsigned uid = 0;                                    // for the message
};

// The choice above; "" with *why_none ("HOME is unset and uid 1234 has no
// passwd entry") when there is none.
std::string choose_cache_dir(const CacheDirInputs& in, std::string* why_none = nullptr);

// choose_cache_dir() for this process's environment and user.
std::string default_cache_dir(std::string* why_none = nullptr);

}  // namespace moejit::cache
