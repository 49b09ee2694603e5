#pragma once
// Shared by the hostile-input tests: bounded-time runs (a hang must fail the
// test, not stall CI), the CLI with a deadline, and planting files.

#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "cache/entry.hpp"
#include "cache/sha256.hpp"
#include "cache_test_util.hpp"

namespace moejit::test {

// Waits for `pid` up to `seconds`; kills it past that. Exit code, or -1 on timeout.
inline int wait_within(pid_t pid, double seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  for (;;) {
    int status = 0;
    const pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

// Runs `fn` in a child process; true when it returned within `seconds`. A
// hang (a read that blocks forever) is a false, not a stalled test.
inline bool finishes_within(double seconds, const std::function<void()>& fn) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    try {
      fn();
    } catch (...) {
      ::_exit(3);
    }
    ::_exit(0);
  }
  return pid > 0 && wait_within(pid, seconds) == 0;
}

struct CliResult {
  int exit_code = -1;  // -1: killed at the deadline
  std::string output;  // stdout and stderr together
};

// `moejit args...` with MOEJIT_CACHE_DIR=cache_dir (unless env sets it), killed after `seconds`.
inline CliResult moejit(const TempDir& scratch, const std::string& cache_dir, std::vector<std::string> args,
                        std::vector<std::pair<std::string, std::string>> env = {}, double seconds = 120) {
  static int counter = 0;
  args.insert(args.begin(), MOEJIT_BINARY);
  bool has_dir = false;
  for (const auto& [k, v] : env) has_dir |= k == "MOEJIT_CACHE_DIR";
  if (!has_dir) env.emplace_back("MOEJIT_CACHE_DIR", cache_dir);
  const std::string out = scratch / ("cli-" + std::to_string(++counter) + ".out");
  CliResult r;
  r.exit_code = wait_within(start_process(args, env, out), seconds);
  r.output = read_text(out);
  return r;
}

inline bool contains(const std::string& text, const std::string& needle) {
  return text.find(needle) != std::string::npos;
}

inline void make_fifo(const std::string& path) {
  std::filesystem::remove(path);
  if (::mkfifo(path.c_str(), 0644) != 0) throw std::runtime_error("mkfifo " + path + " failed");
}

inline void make_link(const std::string& target, const std::string& path) {
  std::error_code ec;
  std::filesystem::remove(path, ec);
  std::filesystem::create_symlink(target, path);
}

}  // namespace moejit::test

namespace moejit::test {

// A bundle's parts: "moejit-cache-bundle 1\n", "<size> <sha256>\n", the
// manifest, the payload. rebundle() puts them back with a fresh header, so a
// test can change the manifest and still get past its checksum.
struct BundleParts {
  std::string magic, manifest, payload;
};

inline BundleParts split_bundle(const std::string& bytes) {
  BundleParts p;
  const size_t magic_end = bytes.find('\n') + 1, header_end = bytes.find('\n', magic_end) + 1;
  p.magic = bytes.substr(0, magic_end);
  const size_t size = std::stoull(bytes.substr(magic_end, header_end - magic_end));
  p.manifest = bytes.substr(header_end, size);
  p.payload = bytes.substr(header_end + size);
  return p;
}

inline std::string rebundle(const BundleParts& p) {
  return p.magic + std::to_string(p.manifest.size()) + " " + cache::sha256_hex(p.manifest) + "\n" + p.manifest +
         p.payload;
}

// "[[[...]]]" nested `depth` deep.
inline std::string deep_array(size_t depth) {
  return std::string(depth, '[') + std::string(depth, ']');
}

}  // namespace moejit::test

namespace moejit::test {

// What someone who edits an entry by hand does: change meta.json, then make
// every checksum agree again (file sizes and SHA-256, and meta_sha256).
inline void reseal(const std::string& folder, const std::function<void(nlohmann::json&)>& edit) {
  nlohmann::json meta = nlohmann::json::parse(read_text(folder + "/meta.json"));
  edit(meta);
  nlohmann::json files = nlohmann::json::object();
  for (const std::string& name : names_in(folder))
    if (name != "meta.json") {
      const std::string bytes = read_text(folder + "/" + name);
      files[name] = {{"size", bytes.size()}, {"sha256", cache::sha256_hex(bytes)}};
    }
  meta["files"] = files;
  meta["meta_sha256"] = cache::meta_checksum(meta);
  write_text(folder + "/meta.json", meta.dump(2));
}

// The entry in `folder`, as a bundle carries it.
inline cache::Entry entry_in(const std::string& folder) {
  cache::Entry e;
  e.meta = nlohmann::json::parse(read_text(folder + "/meta.json"));
  for (const std::string& name : names_in(folder))
    if (name != "meta.json") e.files.push_back({name, read_text(folder + "/" + name)});
  return e;
}

}  // namespace moejit::test

namespace moejit::test {

// A uid no passwd entry names (a container's arbitrary uid).
inline unsigned uid_without_passwd_entry() {
  unsigned uid = 54321;
  while (::getpwuid(uid)) ++uid;
  return uid;
}

// `argv` as `uid` (gid too; needs root) with HOME, XDG_CACHE_HOME and
// MOEJIT_CACHE_DIR unset, then `env` set; stdout and stderr through a pipe
// (the child cannot write our files).
inline CliResult run_as(unsigned uid, const std::vector<std::string>& argv,
                        const std::vector<std::pair<std::string, std::string>>& env = {}) {
  int out[2];
  if (::pipe(out) != 0) throw std::runtime_error("pipe failed");
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(out[1], 1);
    ::dup2(out[1], 2);
    ::close(out[0]);
    for (const char* name : {"HOME", "XDG_CACHE_HOME", "MOEJIT_CACHE_DIR"}) ::unsetenv(name);
    for (const auto& [k, v] : env) ::setenv(k.c_str(), v.c_str(), 1);
    if (::setgid(uid) != 0 || ::setuid(uid) != 0) ::_exit(99);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    ::_exit(98);
  }
  ::close(out[1]);
  CliResult r;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(out[0], buf, sizeof buf)) > 0) r.output.append(buf, static_cast<size_t>(n));
  ::close(out[0]);
  r.exit_code = wait_within(pid, 300);
  return r;
}

}  // namespace moejit::test
