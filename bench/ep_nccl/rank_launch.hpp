#pragma once
// One process per GPU, as engines run expert parallelism: the launcher that
// starts R rank processes and watches them, and the file through which rank 0
// hands NCCL's unique id to the others. Plain POSIX, no GPU: tested in CI
// (tests/unit/test_rank_launch.cpp).

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace moejit::bench {

// Writes `bytes` to `path` through a temporary file beside it and a rename, so
// a reader sees the whole id or nothing. Throws std::runtime_error naming the path.
void publish_id(const std::string& path, const std::vector<unsigned char>& bytes);
// Waits until `path` holds exactly `size` bytes, polling, at most `timeout`;
// throws std::runtime_error naming the path and the timeout.
std::vector<unsigned char> await_id(const std::string& path, std::size_t size, std::chrono::milliseconds timeout);

struct RankExit {
  int rank = 0;
  pid_t pid = 0;
  int code = -1;       // the exit status, or -1 where a signal ended it
  int signal = 0;      // the signal that ended it, or 0
  bool hung = false;   // killed by the launcher: still running `grace` after another rank failed, or at the deadline
  double seconds = 0;  // from the launch to its end
  bool ok() const { return code == 0; }
};
std::string describe(const RankExit& e);

struct LaunchOptions {
  // After the first rank ends badly the others get this long to notice (their cross-rank waits time out and
  // report it) before the launcher kills them as hung.
  std::chrono::milliseconds grace{10000};
  std::chrono::milliseconds deadline{0};  // every rank killed as hung past this (0: no deadline)
};

// Starts `ranks` processes of `argv` (argv[0] a path), rank r's with "--rank r" appended, and waits for all of
// them. `on_exit` sees each as it ends. Returns them by rank. Throws std::runtime_error if a process cannot be
// started (the ones already started are killed first). SIGTERM or SIGINT to the launcher kills the ranks, reaps
// them, and then ends the launcher by that signal (its handlers restored).
std::vector<RankExit> launch_ranks(const std::vector<std::string>& argv, int ranks, const LaunchOptions& options,
                                   const std::function<void(const RankExit&)>& on_exit = {});

// Bounds a step that can wait on another rank forever (NCCL's communicator set-up, a collective whose peer
// died, a stream behind one): unless destroyed within `timeout`, it writes "<name>: <what> did not complete
// within <ms> ms: <why>" to stderr and ends the process with `exit_code` (_exit: nothing else can run safely
// while a thread is stuck in NCCL).
class Watchdog {
 public:
  Watchdog(std::chrono::milliseconds timeout, std::string what, int exit_code, std::string name = "moejit_ep_nccl",
           std::string why = "a rank did not arrive (it died, failed, or is stuck)");
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

 private:
  struct State;
  State* state_;
};

}  // namespace moejit::bench
