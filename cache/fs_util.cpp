#include "cache/fs_util.hpp"

#include <fcntl.h>
#include <sys/stat.h>
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
}  // namespace

std::string error_text(int err) {
  return std::strerror(err);
}

bool read_file(const std::string& path, std::string& out, int* err) {
  Fd f{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  struct stat st {};
  if (f.fd < 0 || ::fstat(f.fd, &st) != 0) {
    if (err) *err = errno;
    return false;
  }
  out.resize(static_cast<size_t>(st.st_size));
  size_t done = 0;
  while (done < out.size()) {
    const ssize_t n = ::read(f.fd, out.data() + done, out.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      if (err) *err = errno;
      return false;
    }
    if (n == 0) break;  // shrank under us: the hash check will reject it
    done += static_cast<size_t>(n);
  }
  out.resize(done);
  return true;
}

bool write_file_synced(const std::string& path, std::string_view bytes, std::string* error) {
  auto fail = [&](const char* what) {
    if (error) *error = std::string(what) + " " + path + ": " + error_text(errno);
    return false;
  };
  Fd f{::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644)};
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

bool fsync_dir(const std::string& path, std::string* error) {
  Fd f{::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
  if (f.fd < 0 || ::fsync(f.fd) != 0) {
    if (error) *error = "cannot fsync " + path + ": " + error_text(errno);
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

void remove_tree(const std::string& path) noexcept {
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
}

std::string unique_suffix() {
  thread_local std::mt19937_64 rng{
      std::random_device{}() ^ static_cast<std::uint64_t>(::getpid()) << 32 ^
      static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count())};
  char buf[48];
  std::snprintf(buf, sizeof buf, "%d-%016llx", static_cast<int>(::getpid()), static_cast<unsigned long long>(rng()));
  return buf;
}

bool touch(const std::string& path) {
  return ::utimensat(AT_FDCWD, path.c_str(), nullptr, 0) == 0;
}

std::optional<std::int64_t> mtime_seconds(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return static_cast<std::int64_t>(st.st_mtim.tv_sec);
}

std::int64_t now_seconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace moejit::cache::fs
