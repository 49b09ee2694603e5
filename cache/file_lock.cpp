#include "cache/file_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace moejit::cache {
namespace {
// How many foreign files (links, FIFOs) one acquire removes from under the
// lock's name before it gives up: each retry means someone keeps planting one.
constexpr int k_max_foreign_removals = 8;

std::pair<std::string, std::string> split(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return {".", path};
  return {slash == 0 ? "/" : path.substr(0, slash), path.substr(slash + 1)};
}
}  // namespace

std::optional<FileLock> FileLock::acquire(const fs::Dir& dir, const std::string& name, std::string* error,
                                          bool* unsupported) {
  return lock(dir, name, true, error, unsupported);
}

std::optional<FileLock> FileLock::try_acquire(const fs::Dir& dir, const std::string& name, bool* unsupported) {
  return lock(dir, name, false, nullptr, unsupported);
}

std::optional<FileLock> FileLock::acquire(const std::string& path, std::string* error, bool* unsupported) {
  const auto [folder, name] = split(path);
  const fs::Dir dir = fs::Dir::open(folder, error);
  if (!dir) return std::nullopt;
  return lock(dir, name, true, error, unsupported);
}

std::optional<FileLock> FileLock::try_acquire(const std::string& path) {
  const auto [folder, name] = split(path);
  const fs::Dir dir = fs::Dir::open(folder, nullptr);
  if (!dir) return std::nullopt;
  return lock(dir, name, false, nullptr, nullptr);
}

std::optional<FileLock> FileLock::lock(const fs::Dir& dir, const std::string& name, bool block, std::string* error,
                                       bool* unsupported) {
  const std::string path = dir.path_of(name);
  bool waited = false;
  int foreign_removed = 0;
  for (;;) {
    // O_NONBLOCK: a FIFO under the lock's name must not block the open.
    const int fd = ::openat(dir.fd(), name.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
    struct stat held {};
    const bool opened = fd >= 0;
    const int open_errno = errno;
    if (!opened || ::fstat(fd, &held) != 0 || !S_ISREG(held.st_mode)) {
      if (opened) ::close(fd);
      const std::optional<struct stat> found = fs::stat_in(dir, name);
      const bool foreign = found && !S_ISREG(found->st_mode) && !S_ISDIR(found->st_mode);
      if (foreign && foreign_removed < k_max_foreign_removals) {
        ++foreign_removed;
        ::unlinkat(dir.fd(), name.c_str(), 0);
        continue;
      }
      if (error)
        *error = "cannot create lock " + path + ": " +
                 (found && !S_ISREG(found->st_mode) ? "it is " + fs::kind_of(found->st_mode)
                                                    : fs::error_text(opened ? EINVAL : open_errno));
      return std::nullopt;
    }
    int rc = ::flock(fd, LOCK_EX | LOCK_NB);
    if (rc != 0 && errno == EWOULDBLOCK && block) {
      waited = true;
      while ((rc = ::flock(fd, LOCK_EX)) != 0 && errno == EINTR) {
      }
    }
    if (rc != 0) {
      const int err = errno;
      if (error) *error = "cannot lock " + path + ": " + std::strerror(err);
      ::close(fd);
      if (err != EWOULDBLOCK) {
        // The file system refuses flock (ENOLCK, EINVAL...): nobody can hold this file.
        if (unsupported) *unsupported = true;
        ::unlinkat(dir.fd(), name.c_str(), 0);
      }
      return std::nullopt;
    }
    // The previous holder may have unlinked the name while we waited: then we
    // hold a lock on an orphaned inode and must start over.
    if (const std::optional<struct stat> named = fs::stat_in(dir, name);
        named && held.st_ino == named->st_ino && held.st_dev == named->st_dev) {
      fs::Dir own = dir.dup(error);
      if (!own) {
        ::close(fd);
        return std::nullopt;
      }
      return FileLock(std::move(own), name, fd, waited);
    }
    ::close(fd);
    if (!block) return std::nullopt;
  }
}

FileLock::FileLock(FileLock&& other) noexcept
    : dir_(std::move(other.dir_)), name_(std::move(other.name_)), fd_(other.fd_), waited_(other.waited_) {
  other.fd_ = -1;
}

FileLock& FileLock::operator=(FileLock&& other) noexcept {
  if (this != &other) {
    release();
    dir_ = std::move(other.dir_);
    name_ = std::move(other.name_);
    fd_ = other.fd_;
    waited_ = other.waited_;
    other.fd_ = -1;
  }
  return *this;
}

FileLock::~FileLock() {
  release();
}

void FileLock::release() noexcept {
  if (fd_ < 0) return;
  ::unlinkat(dir_.fd(), name_.c_str(), 0);  // while still holding it: see the header
  ::close(fd_);
  fd_ = -1;
}

}  // namespace moejit::cache
