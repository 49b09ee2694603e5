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

bool absolute(const std::string& path) {
  return !path.empty() && path.front() == '/';
}
}  // namespace

std::string choose_cache_dir(const CacheDirInputs& in, std::string* why_none) {
  if (!in.moejit_cache_dir.empty()) return in.moejit_cache_dir;
  if (absolute(in.xdg_cache_home)) return in.xdg_cache_home + "/moejit";
  // A relative HOME would put the cache wherever the process happens to run.
  if (absolute(in.home)) return in.home + "/.cache/moejit";
  if (absolute(in.passwd_home)) return in.passwd_home + "/.cache/moejit";
  if (why_none)
    *why_none = std::string(in.home.empty() ? "HOME is unset" : "HOME is not an absolute path") + " and uid " +
                std::to_string(in.uid) + (in.passwd_home.empty() ? " has no passwd entry" : " has no absolute home");
  return {};
}

std::string default_cache_dir(std::string* why_none) {
  CacheDirInputs in;
  in.moejit_cache_dir = env("MOEJIT_CACHE_DIR");
  in.xdg_cache_home = env("XDG_CACHE_HOME");
  in.home = env("HOME");
  in.uid = static_cast<unsigned>(::getuid());
  if (in.moejit_cache_dir.empty() && !absolute(in.xdg_cache_home) && !absolute(in.home))
    if (const passwd* pw = ::getpwuid(::getuid()); pw && pw->pw_dir) in.passwd_home = pw->pw_dir;
  return choose_cache_dir(in, why_none);
}

}  // namespace moejit::cache
