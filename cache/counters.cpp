#include "cache/counters.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>
#include <utility>

#include "cache/bounded_json.hpp"
#include "cache/fs_util.hpp"

namespace moejit::cache {

CounterSnapshot& CounterSnapshot::operator+=(const CounterSnapshot& o) {
  memory_hits += o.memory_hits;
  disk_hits += o.disk_hits;
  misses += o.misses;
  compiles += o.compiles;
  verify_failures += o.verify_failures;
  lock_waits += o.lock_waits;
  publish_failures += o.publish_failures;
  evictions += o.evictions;
  compile_millis += o.compile_millis;
  return *this;
}

CounterSnapshot CounterSnapshot::operator-(const CounterSnapshot& o) const {
  CounterSnapshot d;
  d.memory_hits = memory_hits - o.memory_hits;
  d.disk_hits = disk_hits - o.disk_hits;
  d.misses = misses - o.misses;
  d.compiles = compiles - o.compiles;
  d.verify_failures = verify_failures - o.verify_failures;
  d.lock_waits = lock_waits - o.lock_waits;
  d.publish_failures = publish_failures - o.publish_failures;
  d.evictions = evictions - o.evictions;
  d.compile_millis = compile_millis - o.compile_millis;
  return d;
}

bool CounterSnapshot::empty() const {
  return *this == CounterSnapshot{};
}

void to_json(nlohmann::json& j, const CounterSnapshot& s) {
  j = {{"memory_hits", s.memory_hits},
       {"disk_hits", s.disk_hits},
       {"misses", s.misses},
       {"compiles", s.compiles},
       {"verify_failures", s.verify_failures},
       {"lock_waits", s.lock_waits},
       {"publish_failures", s.publish_failures},
       {"evictions", s.evictions},
       {"compile_millis", s.compile_millis}};
}

void from_json(const nlohmann::json& j, CounterSnapshot& s) {
  s.memory_hits = j.value("memory_hits", std::uint64_t(0));
  s.disk_hits = j.value("disk_hits", std::uint64_t(0));
  s.misses = j.value("misses", std::uint64_t(0));
  s.compiles = j.value("compiles", std::uint64_t(0));
  s.verify_failures = j.value("verify_failures", std::uint64_t(0));
  s.lock_waits = j.value("lock_waits", std::uint64_t(0));
  s.publish_failures = j.value("publish_failures", std::uint64_t(0));
  s.evictions = j.value("evictions", std::uint64_t(0));
  s.compile_millis = j.value("compile_millis", 0.0);
}

void Counters::add_compile_time(double millis) {
  compile_micros_.fetch_add(static_cast<std::uint64_t>(millis * 1000.0 + 0.5), std::memory_order_relaxed);
}

CounterSnapshot Counters::snapshot() const {
  CounterSnapshot s;
  s.memory_hits = memory_hits.load(std::memory_order_relaxed);
  s.disk_hits = disk_hits.load(std::memory_order_relaxed);
  s.misses = misses.load(std::memory_order_relaxed);
  s.compiles = compiles.load(std::memory_order_relaxed);
  s.verify_failures = verify_failures.load(std::memory_order_relaxed);
  s.lock_waits = lock_waits.load(std::memory_order_relaxed);
  s.publish_failures = publish_failures.load(std::memory_order_relaxed);
  s.evictions = evictions.load(std::memory_order_relaxed);
  s.compile_millis = static_cast<double>(compile_micros_.load(std::memory_order_relaxed)) / 1000.0;
  return s;
}

namespace {
std::uint64_t count_field(const nlohmann::json& j, const char* name) {
  const auto it = j.find(name);
  return it != j.end() && it->is_number_unsigned() ? it->get<std::uint64_t>() : 0;
}

CounterSnapshot parse_stats(const std::string& text) {
  nlohmann::json j;
  try {
    j = parse_json(text, {k_max_stats_bytes, k_max_json_depth});
  } catch (const JsonInputError&) {
    return {};  // a torn or foreign file restarts the totals rather than failing a build
  }
  if (!j.is_object()) return {};
  CounterSnapshot s;
  s.memory_hits = count_field(j, "memory_hits");
  s.disk_hits = count_field(j, "disk_hits");
  s.misses = count_field(j, "misses");
  s.compiles = count_field(j, "compiles");
  s.verify_failures = count_field(j, "verify_failures");
  s.lock_waits = count_field(j, "lock_waits");
  s.publish_failures = count_field(j, "publish_failures");
  s.evictions = count_field(j, "evictions");
  if (const auto it = j.find("compile_millis"); it != j.end() && it->is_number() && it->get<double>() >= 0)
    s.compile_millis = it->get<double>();
  return s;
}

std::pair<std::string, std::string> split(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return {".", path};
  return {slash == 0 ? "/" : path.substr(0, slash), path.substr(slash + 1)};
}
}  // namespace

bool add_to_stats_file(const fs::Dir& dir, const std::string& name, const CounterSnapshot& delta, std::string* error) {
  const std::string path = dir.path_of(name);
  // O_NOFOLLOW: a link planted as stats.json must not redirect the write;
  // O_NONBLOCK: nor may a FIFO block it. Such a file was never written by
  // moejit: it is unlinked (the link, not its target) and the open retried once.
  int fd = -1;
  for (int attempt = 0; attempt < 2 && fd < 0; ++attempt) {
    fd = ::openat(dir.fd(), name.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
    struct stat st {};
    if (fd >= 0 && ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) break;
    const int err = fd >= 0 ? EINVAL : errno;
    if (fd >= 0) ::close(fd), fd = -1;
    const auto found = fs::stat_in(dir, name);
    if (attempt == 0 && found && !S_ISREG(found->st_mode) && !S_ISDIR(found->st_mode)) {
      ::unlinkat(dir.fd(), name.c_str(), 0);
      continue;
    }
    if (error)
      *error = "cannot open " + path + ": " + (found ? "it is " + fs::kind_of(found->st_mode) : fs::error_text(err));
    return false;
  }
  bool ok = false;
  if (::flock(fd, LOCK_EX) == 0) {
    std::string text;
    char buf[4096];
    ssize_t n;
    while (text.size() <= k_max_stats_bytes && (n = ::pread(fd, buf, sizeof buf, static_cast<off_t>(text.size()))) > 0)
      text.append(buf, static_cast<size_t>(n));
    CounterSnapshot total = text.size() > k_max_stats_bytes ? CounterSnapshot{} : parse_stats(text);
    total += delta;
    const std::string out = nlohmann::json(total).dump(2) + "\n";
    // The new text over the old, then the tail cut: never an empty file, even if this process dies between.
    ok = ::pwrite(fd, out.data(), out.size(), 0) == static_cast<ssize_t>(out.size()) &&
         ::ftruncate(fd, static_cast<off_t>(out.size())) == 0;
  }
  if (!ok && error) *error = "cannot update " + path + ": " + std::strerror(errno);
  ::close(fd);
  return ok;
}

CounterSnapshot read_stats_file(const fs::Dir& dir, const std::string& name, std::string* error) {
  // Under the writers' lock (shared), so a reader never sees an update half written. Where the file system
  // refuses flock, the writers hold none either and the read goes on without.
  const int fd = ::openat(dir.fd(), name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  const bool locked = fd >= 0 && ::flock(fd, LOCK_SH) == 0;
  std::string text;
  int err = 0;
  std::string why;
  const bool read = fs::read_file(dir, name, k_max_stats_bytes, text, &why, &err);
  if (locked) ::flock(fd, LOCK_UN);
  if (fd >= 0) ::close(fd);
  if (!read) {
    if (err != ENOENT && error) *error = why;
    return {};
  }
  return parse_stats(text);
}

bool add_to_stats_file(const std::string& path, const CounterSnapshot& delta, std::string* error) {
  const auto [folder, name] = split(path);
  const fs::Dir dir = fs::Dir::open(folder, error);
  return dir && add_to_stats_file(dir, name, delta, error);
}

CounterSnapshot read_stats_file(const std::string& path, std::string* error) {
  const auto [folder, name] = split(path);
  std::string why;
  int err = 0;
  const fs::Dir dir = fs::Dir::open(folder, &why, &err);
  if (!dir) {
    if (err != ENOENT && error) *error = why;
    return {};
  }
  return read_stats_file(dir, name, error);
}

}  // namespace moejit::cache
