#include "bench/ep_nccl/rank_launch.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <csignal>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace moejit::bench {
namespace {
using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

std::string errno_text() {
  return std::strerror(errno);
}

// SIGTERM or SIGINT to the launcher while its ranks run (a harness's timeout, Ctrl-C): without a handler the
// launcher died and left its ranks spinning on the GPUs, where the next run's persistent grids then could not
// all be resident.
volatile std::sig_atomic_t g_stop_signal = 0;
void on_stop_signal(int signal) {
  g_stop_signal = signal;
}
class StopSignals {
 public:
  StopSignals() {
    g_stop_signal = 0;
    struct sigaction stop {};
    stop.sa_handler = on_stop_signal;
    sigemptyset(&stop.sa_mask);
    ::sigaction(SIGTERM, &stop, &term_);
    ::sigaction(SIGINT, &stop, &int_);
  }
  ~StopSignals() { restore(); }
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;
  // The launcher's own handlers back, then the signal it was sent, so it ends as a signalled process would.
  void restore_and_raise() {
    const int signal = g_stop_signal;
    restore();
    if (signal) ::raise(signal);
  }

 private:
  void restore() {
    if (restored_) return;
    ::sigaction(SIGTERM, &term_, nullptr);
    ::sigaction(SIGINT, &int_, nullptr);
    restored_ = true;
  }
  struct sigaction term_ {
  }, int_{};
  bool restored_ = false;
};
}  // namespace

void publish_id(const std::string& path, const std::vector<unsigned char>& bytes) {
  const std::string tmp = fmt::format("{}.tmp.{}", path, getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) throw std::runtime_error(fmt::format("cannot create {}: {}", tmp, errno_text()));
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string why = errno_text();
      ::close(fd);
      ::unlink(tmp.c_str());
      throw std::runtime_error(fmt::format("cannot write {}: {}", tmp, why));
    }
    done += std::size_t(n);
  }
  if (::close(fd) != 0 || ::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = errno_text();
    ::unlink(tmp.c_str());
    throw std::runtime_error(fmt::format("cannot publish {}: {}", path, why));
  }
}

std::vector<unsigned char> await_id(const std::string& path, std::size_t size, std::chrono::milliseconds timeout) {
  const auto t0 = Clock::now();
  for (;;) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
      struct stat st {};
      const bool sized = ::fstat(fd, &st) == 0;
      std::vector<unsigned char> bytes(sized ? std::size_t(st.st_size) : 0);
      std::size_t got = 0;
      while (got < bytes.size()) {
        const ssize_t n = ::read(fd, bytes.data() + got, bytes.size() - got);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        got += std::size_t(n);
      }
      ::close(fd);
      // publish_id renames a whole file into place: another size is not an id of this NCCL.
      if (!sized || got != size)
        throw std::runtime_error(
            fmt::format("{} holds {} bytes, not an NCCL unique id ({} bytes): another run's file?", path, got, size));
      return bytes;
    }
    if (errno != ENOENT) throw std::runtime_error(fmt::format("cannot read {}: {}", path, errno_text()));
    if (Clock::now() - t0 >= timeout)
      throw std::runtime_error(fmt::format("{} did not appear within {} ms: rank 0 did not publish the NCCL unique id",
                                           path, timeout.count()));
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

std::string describe(const RankExit& e) {
  if (e.hung)
    return fmt::format("rank {} (pid {}) was still running {:.1f} s after the launch and was killed", e.rank, e.pid,
                       e.seconds);
  if (e.signal)
    return fmt::format("rank {} (pid {}) was ended by signal {} ({}) after {:.1f} s", e.rank, e.pid, e.signal,
                       strsignal(e.signal), e.seconds);
  return fmt::format("rank {} (pid {}) exited with {} after {:.1f} s", e.rank, e.pid, e.code, e.seconds);
}

std::vector<RankExit> launch_ranks(const std::vector<std::string>& argv, int ranks, const LaunchOptions& options,
                                   const std::function<void(const RankExit&)>& on_exit) {
  if (argv.empty()) throw std::invalid_argument("launch_ranks: argv is empty");
  if (ranks < 1 || ranks > 64)
    throw std::invalid_argument(fmt::format("launch_ranks: ranks = {} is outside [1, 64]", ranks));
  const auto t0 = Clock::now();
  StopSignals stop_signals;
  std::vector<RankExit> exits(ranks);
  std::vector<bool> running(ranks, false);
  auto kill_running = [&](bool hung) {
    for (int r = 0; r < ranks; ++r)
      if (running[r]) {
        ::kill(exits[r].pid, SIGKILL);
        exits[r].hung = hung;
      }
  };
  for (int r = 0; r < ranks; ++r) {
    std::vector<std::string> args = argv;
    args.push_back("--rank");
    args.push_back(std::to_string(r));
    std::vector<char*> cargs;
    for (std::string& a : args) cargs.push_back(a.data());
    cargs.push_back(nullptr);
    pid_t pid = 0;
    const int err = posix_spawn(&pid, cargs[0], nullptr, nullptr, cargs.data(), environ);
    if (err != 0) {
      kill_running(false);
      for (int s = 0; s < r; ++s) ::waitpid(exits[s].pid, nullptr, 0);
      throw std::runtime_error(fmt::format("cannot start rank {} ({}): {}", r, argv[0], std::strerror(err)));
    }
    exits[r].rank = r;
    exits[r].pid = pid;
    running[r] = true;
  }
  int left = ranks;
  double first_failure = -1;  // seconds after the launch when a rank first ended badly
  bool killed = false;
  while (left > 0) {
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, WNOHANG);
    if (pid < 0 && errno != EINTR) throw std::runtime_error(fmt::format("waitpid: {}", errno_text()));
    if (pid > 0) {
      for (int r = 0; r < ranks; ++r) {
        if (!running[r] || exits[r].pid != pid) continue;
        RankExit& e = exits[r];
        running[r] = false;
        --left;
        e.seconds = since(t0);
        e.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        e.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
        if (e.hung) e.signal = 0;  // the launcher's SIGKILL, reported as the hang it was
        if (!e.ok() && first_failure < 0) first_failure = e.seconds;
        if (on_exit) on_exit(e);
      }
      continue;
    }
    const double now = since(t0);
    const bool grace_over = first_failure >= 0 && now - first_failure >= options.grace.count() / 1000.0;
    const bool deadline_over = options.deadline.count() > 0 && now >= options.deadline.count() / 1000.0;
    if (!killed && (grace_over || deadline_over || g_stop_signal)) {
      kill_running(!g_stop_signal);
      killed = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  stop_signals.restore_and_raise();
  return exits;
}

struct Watchdog::State {
  std::mutex mutex;
  std::condition_variable done;
  bool disarmed = false;
  std::thread thread;
};

Watchdog::Watchdog(std::chrono::milliseconds timeout, std::string what, int exit_code, std::string name,
                   std::string why)
    : state_(new State) {
  state_->thread = std::thread(
      [s = state_, timeout, what = std::move(what), exit_code, name = std::move(name), why = std::move(why)] {
        std::unique_lock lock(s->mutex);
        if (s->done.wait_for(lock, timeout, [&] { return s->disarmed; })) return;
        const std::string line =
            fmt::format("{}: {} did not complete within {} ms: {}\n", name, what, timeout.count(), why);
        (void)!::write(2, line.data(), line.size());
        ::_exit(exit_code);
      });
}

Watchdog::~Watchdog() {
  {
    std::lock_guard lock(state_->mutex);
    state_->disarmed = true;
  }
  state_->done.notify_one();
  state_->thread.join();
  delete state_;
}

}  // namespace moejit::bench
