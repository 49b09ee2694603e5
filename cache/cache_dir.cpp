#include "cache/cache_dir.hpp"

#include <pwd.h>
#include <unistd.h>

#include <cstdlib>

namespace moejit::cache {
namespace {
std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? std::string(v) : std::string();
}
}  // namespace

std::string default_cache_dir() {
  if (std::string dir = env("MOEJIT_CACHE_DIR"); !dir.empty()) return dir;
  if (std::string xdg = env("XDG_CACHE_HOME"); !xdg.empty()) return xdg + "/moejit";
  std::string home = env("HOME");
  if (home.empty())
    if (const passwd* pw = getpwuid(getuid()); pw && pw->pw_dir) home = pw->pw_dir;
  return (home.empty() ? std::string("/tmp") : home) + "/.cache/moejit";
}

}  // namespace moejit::cache
