#pragma once
// Shared by the cache tests: scratch directories, child processes, fake entries.

#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "cache/config.hpp"
#include "cache/entry.hpp"

extern char** environ;

namespace moejit::test {

// A fresh directory under $TMPDIR (or /tmp), removed with everything in it.
class TempDir {
 public:
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string pattern = std::string(base && *base ? base : "/tmp") + "/moejit-test-XXXXXX";
    if (!::mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

inline std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

inline void write_text(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

// Flips every bit of byte `offset` of a file, in place.
inline void flip_byte(const std::string& path, size_t offset) {
  std::string bytes = read_text(path);
  if (offset >= bytes.size()) throw std::runtime_error("flip_byte: " + path + " is too short");
  bytes[offset] = static_cast<char>(~bytes[offset]);
  write_text(path, bytes);
}

// Names in `dir` (not recursive), sorted.
inline std::vector<std::string> names_in(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

// Starts `argv` with the environment plus `env` overrides; stdout and stderr
// go to `out_path`. Returns the pid.
inline pid_t start_process(const std::vector<std::string>& argv,
                           const std::vector<std::pair<std::string, std::string>>& env, const std::string& out_path) {
  std::vector<std::string> env_text;
  for (char** e = environ; *e; ++e) {
    std::string kv = *e;
    bool replaced = false;
    for (const auto& [k, v] : env) replaced |= kv.rfind(k + "=", 0) == 0;
    if (!replaced) env_text.push_back(kv);
  }
  for (const auto& [k, v] : env) env_text.push_back(k + "=" + v);
  std::vector<char*> args, envp;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  for (const std::string& e : env_text) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, args[0], &actions, nullptr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) throw std::runtime_error("posix_spawn " + argv[0] + " failed: " + std::to_string(rc));
  return pid;
}

inline int wait_exit_code(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

struct ProcessResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

inline ProcessResult run_process(const std::vector<std::string>& argv,
                                 const std::vector<std::pair<std::string, std::string>>& env, const TempDir& scratch) {
  static int counter = 0;
  const std::string out = scratch / ("process-" + std::to_string(++counter) + ".out");
  ProcessResult r;
  r.exit_code = wait_exit_code(start_process(argv, env, out));
  r.output = read_text(out);
  return r;
}

// An entry with deterministic content of about `size` bytes, like a kernel's.
inline cache::Entry fake_entry(const std::string& tag, size_t size = 1000) {
  cache::Entry e;
  e.files = {{"source.cu", "// " + tag + "\n"}, {"kernel.cubin", std::string(size, static_cast<char>(tag.size()))}};
  e.meta = {{"summary", "fake<" + tag + ">"}};
  return e;
}

// A Config for `dir` whose warnings are collected in `*warnings`.
inline cache::Config quiet_config(const std::string& dir, std::vector<std::string>* warnings) {
  cache::Config c;
  c.dir = dir;
  c.warn = [warnings](const std::string& w) { warnings->push_back(w); };
  return c;
}

}  // namespace moejit::test
