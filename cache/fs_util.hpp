#pragma once
// The few POSIX file operations the cache needs, with errors returned (not
// thrown): a cache that cannot write must degrade, never abort the caller.
//
// Below the cache root nothing is reached through a symbolic link: a folder is
// opened relative to its parent's descriptor with O_NOFOLLOW, one component at
// a time, and a file is read or locked only when it is a regular file (a FIFO
// would block its reader forever, a device would never end). A link, FIFO or
// device planted in the cache directory can therefore neither redirect a write
// outside it nor hang a reader. The root itself is configuration
// (MOEJIT_CACHE_DIR, ~/.cache may be a link), so a link there is followed.

#include <sys/stat.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace moejit::cache::fs {

std::string error_text(int err);  // "No space left on device"

// What a file that is not a regular one is: "a symbolic link", "a FIFO", ...
std::string kind_of(mode_t mode);

// An open directory and the path it was reached by (for messages only: every
// operation goes through the descriptor).
class Dir {
 public:
  Dir() = default;
  ~Dir();
  Dir(Dir&& other) noexcept;
  Dir& operator=(Dir&& other) noexcept;
  Dir(const Dir&) = delete;
  Dir& operator=(const Dir&) = delete;

  // The directory at `path`, symbolic links followed (a root the user chose).
  static Dir open(const std::string& path, std::string* error, int* err = nullptr);
  // The folder `name` inside this one, never through a symbolic link.
  Dir sub(std::string_view name, std::string* error, int* err = nullptr) const;
  // sub(), creating the folder (mode 0755) first when it is absent.
  Dir make_sub(std::string_view name, std::string* error) const;

  // Another descriptor for the same directory (for an object that outlives this one).
  Dir dup(std::string* error) const;

  explicit operator bool() const { return fd_ >= 0; }
  int fd() const { return fd_; }
  const std::string& path() const { return path_; }
  // What messages call `name` in this directory: "<path>/<name>", or just
  // "<name>" once set_path("") made paths relative (an entry's own problems).
  std::string path_of(std::string_view name) const {
    return path_.empty() ? std::string(name) : path_ + "/" + std::string(name);
  }
  void set_path(std::string path) { path_ = std::move(path); }

 private:
  Dir(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  int fd_ = -1;
  std::string path_;
};

// Reads the regular file `name` in `dir`, at most `max_bytes` of it. On
// failure returns false, sets *error to a message naming the file, and *err
// to errno (ELOOP for a symbolic link, EINVAL for a FIFO, device or folder,
// EFBIG for a file over the limit).
bool read_file(const Dir& dir, std::string_view name, std::uint64_t max_bytes, std::string& out, std::string* error,
               int* err = nullptr);

// Creates `name` in `dir` (it must not exist, not even as a link), writes
// `bytes` and fsyncs it.
bool write_file_synced(const Dir& dir, std::string_view name, std::string_view bytes, std::string* error);

// fsync on a directory, so a rename or file creation inside it is durable.
bool fsync_dir(const Dir& dir, std::string* error);

// mkdir -p, symbolic links followed: for the root only.
bool make_dirs(const std::string& path, std::string* error);

// rename(2) within one directory. Returns errno (0 on success).
int rename_in(const Dir& dir, std::string_view from, std::string_view to);

// rm -rf of `name` in `dir` that never follows a link and never throws: a
// concurrent remover may already have taken parts. False if something stayed.
bool remove_tree(const Dir& dir, std::string_view name) noexcept;

// The names in `dir` ("." and ".." excluded). Empty with *error on failure.
std::vector<std::string> names_in(const Dir& dir, std::string* error = nullptr);

// lstat(2) of `name` in `dir`: nullopt (with *err) if it cannot be stat'ed.
std::optional<struct stat> stat_in(const Dir& dir, std::string_view name, int* err = nullptr);

// Sets the modification time of `name` to now (the cache's cheap "last used"
// record); a link is not followed.
bool touch(const Dir& dir, std::string_view name);

// "<pid>-<16 random hex>": unique among processes and threads on every host
// that shares the cache directory.
std::string unique_suffix();

std::int64_t now_seconds();

}  // namespace moejit::cache::fs
