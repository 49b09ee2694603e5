#pragma once
// An exclusive per-key lock: flock(2) on `<key>.lock`.
//
// flock is released by the kernel when its holder dies, so a crashed process
// never leaves a key locked; what it can leave is the lock *file*. The holder
// unlinks the file before it lets go, and every acquirer checks, once it holds
// the lock, that the name still refers to the inode it locked (else it retries).
// That makes unlinking safe: two processes can never both believe they hold a
// key, and lock files do not accumulate. A file left by a crash is picked up
// by the next acquirer (or by sweep_stale) and removed.
//
// The lock file is opened without following a symbolic link, and must be a
// regular file: anything else found under its name (a link planted in the
// cache directory, a FIFO) was never created by a lock, so it is unlinked and
// the open retried. Nothing outside the lock's folder is ever created.

#include <optional>
#include <string>

#include "cache/fs_util.hpp"

namespace moejit::cache {

class FileLock {
 public:
  // Blocks until the lock `name` in `dir` is held. nullopt (with *error) when
  // the lock file cannot be created, e.g. in a read-only directory, or when
  // the file system refuses flock (some network file systems); then
  // *unsupported is set.
  static std::optional<FileLock> acquire(const fs::Dir& dir, const std::string& name, std::string* error,
                                         bool* unsupported = nullptr);
  // Never blocks: nullopt when another holder has it (or on error; *unsupported set where the file system
  // refuses flock, so that nobody can hold it).
  static std::optional<FileLock> try_acquire(const fs::Dir& dir, const std::string& name, bool* unsupported = nullptr);

  // The same for a lock at `path` (links in its folder's path are followed).
  static std::optional<FileLock> acquire(const std::string& path, std::string* error, bool* unsupported = nullptr);
  static std::optional<FileLock> try_acquire(const std::string& path);

  FileLock(FileLock&& other) noexcept;
  FileLock& operator=(FileLock&& other) noexcept;
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;
  ~FileLock();  // unlinks the file, then releases

  // Whether acquire() had to wait for another holder.
  bool waited() const { return waited_; }

 private:
  FileLock(fs::Dir dir, std::string name, int fd, bool waited)
      : dir_(std::move(dir)), name_(std::move(name)), fd_(fd), waited_(waited) {}
  static std::optional<FileLock> lock(const fs::Dir& dir, const std::string& name, bool block, std::string* error,
                                      bool* unsupported);
  void release() noexcept;

  fs::Dir dir_;
  std::string name_;
  int fd_ = -1;
  bool waited_ = false;
};

}  // namespace moejit::cache
