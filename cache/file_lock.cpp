#include "cache/file_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace moejit::cache {

std::optional<FileLock> FileLock::acquire(const std::string& path, std::string* error, bool* unsupported) {
  return lock(path, true, error, unsupported);
}

std::optional<FileLock> FileLock::try_acquire(const std::string& path) {
  return lock(path, false, nullptr, nullptr);
}

std::optional<FileLock> FileLock::lock(const std::string& path, bool block, std::string* error, bool* unsupported) {
  bool waited = false;
  for (;;) {
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
      if (error) *error = "cannot create lock " + path + ": " + std::strerror(errno);
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
        ::unlink(path.c_str());
      }
      return std::nullopt;
    }
    // The previous holder may have unlinked the path while we waited: then we
    // hold a lock on an orphaned inode and must start over.
    struct stat held {
    }, named{};
    if (::fstat(fd, &held) == 0 && ::stat(path.c_str(), &named) == 0 && held.st_ino == named.st_ino &&
        held.st_dev == named.st_dev)
      return FileLock(path, fd, waited);
    ::close(fd);
    if (!block) return std::nullopt;
  }
}

FileLock::FileLock(FileLock&& other) noexcept : path_(std::move(other.path_)), fd_(other.fd_), waited_(other.waited_) {
  other.fd_ = -1;
}

FileLock& FileLock::operator=(FileLock&& other) noexcept {
  if (this != &other) {
    release();
    path_ = std::move(other.path_);
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
  ::unlink(path_.c_str());  // while still holding it: see the header
  ::close(fd_);
  fd_ = -1;
}

}  // namespace moejit::cache
