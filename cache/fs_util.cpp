#include "cache/fs_util.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <random>

namespace moejit::cache::fs {
namespace {
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

// A planted tree deeper than this is left in place rather than recursed into
// (each level holds a descriptor).
constexpr int k_max_remove_depth = 16;

std::string name_str(std::string_view name) {
  return std::string(name);
}

// Why opening `name` in `dir` without following a link failed, as a sentence tail.
std::string open_failure(int dir_fd, std::string_view name, int err) {
  if (err == ELOOP || err == ENOTDIR || err == ENXIO || err == EISDIR) {
    struct stat st {};
    if (::fstatat(dir_fd, name_str(name).c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0)
      return "is " + kind_of(st.st_mode) + (S_ISLNK(st.st_mode) ? " (not followed)" : "");
  }
  return error_text(err);
}
}  // namespace

std::string error_text(int err) {
  return std::strerror(err);
}

std::string kind_of(mode_t mode) {
  if (S_ISREG(mode)) return "a regular file";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISLNK(mode)) return "a symbolic link";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

Dir::~Dir() {
  if (fd_ >= 0) ::close(fd_);
}

Dir::Dir(Dir&& other) noexcept : fd_(other.fd_), path_(std::move(other.path_)) {
  other.fd_ = -1;
}

Dir& Dir::operator=(Dir&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.fd_;
    path_ = std::move(other.path_);
    other.fd_ = -1;
  }
  return *this;
}

Dir Dir::open(const std::string& path, std::string* error, int* err) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    const int e = errno;
    if (err) *err = e;
    if (error) {
      struct stat st {};
      *error =
          path + (e == ENOTDIR && ::stat(path.c_str(), &st) == 0 ? " is " + kind_of(st.st_mode) + ", not a directory"
                                                                 : ": " + error_text(e));
    }
    return {};
  }
  return Dir(fd, path);
}

Dir Dir::sub(std::string_view name, std::string* error, int* err) const {
  const int fd = ::openat(fd_, name_str(name).c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    const int e = errno;
    if (err) *err = e;
    if (error) {
      const std::string why = open_failure(fd_, name, e);
      *error = path_of(name) + (why.rfind("is ", 0) == 0 ? " " + why + ", not a directory" : ": " + why);
    }
    return {};
  }
  return Dir(fd, path_of(name));
}

Dir Dir::dup(std::string* error) const {
  const int fd = ::fcntl(fd_, F_DUPFD_CLOEXEC, 0);
  if (fd < 0) {
    if (error) *error = "cannot duplicate the descriptor of " + path_ + ": " + error_text(errno);
    return {};
  }
  return Dir(fd, path_);
}

Dir Dir::make_sub(std::string_view name, std::string* error) const {
  if (::mkdirat(fd_, name_str(name).c_str(), 0755) != 0 && errno != EEXIST) {
    if (error) *error = "cannot create " + path_of(name) + ": " + error_text(errno);
    return {};
  }
  return sub(name, error);
}

bool read_file(const Dir& dir, std::string_view name, std::uint64_t max_bytes, std::string& out, std::string* error,
               int* err) {
  auto fail = [&](int e, const std::string& why) {
    if (err) *err = e;
    if (error) *error = dir.path_of(name) + " " + why;
    return false;
  };
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer.
  Fd f{::openat(dir.fd(), name_str(name).c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)};
  if (f.fd < 0) {
    const int e = errno;
    const std::string why = open_failure(dir.fd(), name, e);
    return fail(e, why.rfind("is ", 0) == 0 ? why : "cannot be read: " + why);
  }
  struct stat st {};
  if (::fstat(f.fd, &st) != 0) return fail(errno, "cannot be read: " + error_text(errno));
  if (!S_ISREG(st.st_mode)) return fail(EINVAL, "is " + kind_of(st.st_mode) + ", not a regular file");
  const auto size = static_cast<std::uint64_t>(st.st_size);
  if (size > max_bytes)
    return fail(EFBIG, "is " + std::to_string(size) + " bytes, over the limit of " + std::to_string(max_bytes));
  out.resize(static_cast<size_t>(size));
  size_t done = 0;
  while (done < out.size()) {
    const ssize_t n = ::read(f.fd, out.data() + done, out.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail(errno, "cannot be read: " + error_text(errno));
    if (n == 0) break;  // shrank under us: the hash check will reject it
    done += static_cast<size_t>(n);
  }
  out.resize(done);
  return true;
}

bool write_file_synced(const Dir& dir, std::string_view name, std::string_view bytes, std::string* error) {
  auto fail = [&](const char* what) {
    if (error) *error = std::string(what) + " " + dir.path_of(name) + ": " + error_text(errno);
    return false;
  };
  Fd f{::openat(dir.fd(), name_str(name).c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644)};
  if (f.fd < 0) return fail("cannot create");
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(f.fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return fail("cannot write");
    done += static_cast<size_t>(n);
  }
  if (::fsync(f.fd) != 0) return fail("cannot fsync");
  const int fd = f.fd;
  f.fd = -1;
  if (::close(fd) != 0) return fail("cannot close");  // NFS reports write errors here
  return true;
}

bool fsync_dir(const Dir& dir, std::string* error) {
  if (::fsync(dir.fd()) != 0) {
    if (error) *error = "cannot fsync " + dir.path() + ": " + error_text(errno);
    return false;
  }
  return true;
}

bool make_dirs(const std::string& path, std::string* error) {
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  if (ec) {
    if (error) *error = "cannot create " + path + ": " + ec.message();
    return false;
  }
  return true;
}

int rename_in(const Dir& dir, std::string_view from, std::string_view to) {
  return ::renameat(dir.fd(), name_str(from).c_str(), dir.fd(), name_str(to).c_str()) == 0 ? 0 : errno;
}

namespace {
bool remove_tree_at(int dir_fd, const std::string& name, int depth) noexcept {
  if (::unlinkat(dir_fd, name.c_str(), 0) == 0 || errno == ENOENT) return true;
  if (errno != EISDIR && errno != EPERM) return false;  // Linux reports a directory as EISDIR
  if (depth >= k_max_remove_depth) return false;
  const int fd = ::openat(dir_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return errno == ENOENT;
  DIR* d = ::fdopendir(fd);
  if (!d) {
    ::close(fd);
    return false;
  }
  std::vector<std::string> names;
  while (const dirent* e = ::readdir(d))
    if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) names.emplace_back(e->d_name);
  bool ok = true;
  for (const std::string& n : names) ok = remove_tree_at(::dirfd(d), n, depth + 1) && ok;
  ::closedir(d);
  return (::unlinkat(dir_fd, name.c_str(), AT_REMOVEDIR) == 0 || errno == ENOENT) && ok;
}
}  // namespace

bool remove_tree(const Dir& dir, std::string_view name) noexcept {
  try {
    return remove_tree_at(dir.fd(), name_str(name), 0);
  } catch (...) {
    return false;  // std::bad_alloc for a name list
  }
}

std::vector<std::string> names_in(const Dir& dir, std::string* error) {
  std::vector<std::string> out;
  // A fresh open file description: the directory stream must not move dir's offset.
  const int fd = ::openat(dir.fd(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  DIR* d = fd < 0 ? nullptr : ::fdopendir(fd);
  if (!d) {
    if (error) *error = "cannot list " + dir.path() + ": " + error_text(errno);
    if (fd >= 0) ::close(fd);
    return out;
  }
  while (const dirent* e = ::readdir(d))
    if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) out.emplace_back(e->d_name);
  ::closedir(d);
  return out;
}

std::optional<struct stat> stat_in(const Dir& dir, std::string_view name, int* err) {
  struct stat st {};
  if (::fstatat(dir.fd(), name_str(name).c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (err) *err = errno;
    return std::nullopt;
  }
  return st;
}

bool touch(const Dir& dir, std::string_view name) {
  return ::utimensat(dir.fd(), name_str(name).c_str(), nullptr, AT_SYMLINK_NOFOLLOW) == 0;
}

std::string unique_suffix() {
  thread_local std::mt19937_64 rng{
      std::random_device{}() ^ static_cast<std::uint64_t>(::getpid()) << 32 ^
      static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count())};
  char buf[48];
  std::snprintf(buf, sizeof buf, "%d-%016llx", static_cast<int>(::getpid()), static_cast<unsigned long long>(rng()));
  return buf;
}

std::int64_t now_seconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace moejit::cache::fs
