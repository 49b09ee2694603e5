#include "tools/cache_config.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>
#include <stdexcept>

#include "cache/disk_store.hpp"

namespace moejit::tools {

cache::Config disk_cache_config() {
  cache::Config config = cache::Config::from_env();
  if (config.dir.empty())
    throw std::runtime_error("no kernel cache directory: " + config.no_dir_reason +
                             "; set MOEJIT_CACHE_DIR to the directory to use");
  return config;
}

namespace {
// Anyone who can write the cache can make moejit run their code (README.md,
// "Trust model"): say so when that is more people than its owner.
void warn_if_shared(const cache::fs::Dir& dir, CacheDirCheck& out) {
  struct stat st {};
  if (::fstat(dir.fd(), &st) != 0) return;
  if (st.st_uid != ::geteuid())
    out.warnings.push_back(
        fmt::format("{} belongs to uid {}, not to this user (uid {})", dir.path(), st.st_uid, ::geteuid()));
  if (st.st_mode & (S_IWGRP | S_IWOTH))
    out.warnings.push_back(
        fmt::format("{} is writable by {} (mode {:o}): whoever can write it can replace the kernels "
                    "this user runs",
                    dir.path(), st.st_mode & S_IWOTH ? "every user" : "its group", st.st_mode & 07777));
}

// Creates and removes a temp file in `dir`.
bool can_write(const cache::fs::Dir& dir, std::string* why) {
  const std::string name = ".tmp-doctor-" + cache::fs::unique_suffix();
  const int fd = ::openat(dir.fd(), name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    *why = "cannot create a file in " + dir.path() + ": " + cache::fs::error_text(errno);
    return false;
  }
  ::close(fd);
  ::unlinkat(dir.fd(), name.c_str(), 0);
  return true;
}
}  // namespace

CacheDirCheck check_cache_dir(const std::string& root) {
  CacheDirCheck out;
  std::string error;
  int err = 0;
  const cache::fs::Dir top = cache::fs::Dir::open(root, &error, &err);
  if (!top && err == ENOENT) {
    // Not made yet: the first publish makes it inside its nearest existing ancestor.
    std::filesystem::path up = std::filesystem::path(root).parent_path();
    while (!up.empty() && !std::filesystem::exists(up) && up != up.root_path()) up = up.parent_path();
    const cache::fs::Dir parent = cache::fs::Dir::open(up.empty() ? "." : up.string(), &error);
    if (parent && can_write(parent, &error)) {
      out.usable = true;
      out.status = "not created yet; it will be made inside " + parent.path();
    } else {
      out.status = "does not exist and cannot be made: " + error;
    }
    return out;
  }
  if (!top) {
    out.status = error;
    return out;
  }
  warn_if_shared(top, out);
  const cache::DiskStore disk(root);
  const cache::fs::Dir store = disk.open(false, &error, &err);
  if (!store && err != ENOENT) {
    out.status = error;
    return out;
  }
  if (store) warn_if_shared(store, out);
  std::string list_error;
  const size_t entries = disk.list(&list_error).size();
  if (!list_error.empty()) {
    out.status = list_error;
    return out;
  }
  if (!can_write(store ? store : top, &error)) {
    out.status = error;
    return out;
  }
  out.usable = true;
  out.status = fmt::format("writable, {} entries", entries);
  return out;
}

}  // namespace moejit::tools
