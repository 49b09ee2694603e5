// The 2-GPU program's process side without a GPU (bench/ep_nccl/rank_launch):
// the launcher reports each rank's end, kills the ranks that hang after
// another failed, and the unique-id file is all or nothing.
#include <doctest/doctest.h>

#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "bench/ep_nccl/nvlink_counters.hpp"
#include "bench/ep_nccl/rank_launch.hpp"
#include "bench/ep_nccl/rank_sum.hpp"

using namespace moejit;
using namespace std::chrono_literals;

namespace {
// /bin/sh -c SCRIPT sh --rank r: the script sees its rank as $2.
std::vector<std::string> shell(const std::string& script) {
  return {"/bin/sh", "-c", script, "sh"};
}

std::filesystem::path scratch_dir() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "moejit-rank-launch-XXXXXX").string();
  REQUIRE(mkdtemp(tmpl.data()) != nullptr);
  return tmpl;
}
}  // namespace

TEST_CASE("launch_ranks starts every rank with its --rank and reports each exit") {
  const std::filesystem::path dir = scratch_dir();
  std::vector<int> seen;
  const auto exits = bench::launch_ranks(shell("echo $1 $2 > " + dir.string() + "/rank$2; exit $(( $2 * 3 ))"), 2, {},
                                         [&](const bench::RankExit& e) { seen.push_back(e.rank); });
  REQUIRE(exits.size() == 2);
  CHECK(exits[0].ok());
  CHECK(exits[1].code == 3);
  CHECK_FALSE(exits[1].ok());
  CHECK(seen.size() == 2);
  CHECK(bench::describe(exits[1]).find("rank 1 (pid ") == 0);
  CHECK(bench::describe(exits[1]).find("exited with 3") != std::string::npos);
  for (int r = 0; r < 2; ++r) {
    std::FILE* f = std::fopen((dir / ("rank" + std::to_string(r))).c_str(), "r");
    REQUIRE(f);
    char line[64] = {};
    CHECK(std::fgets(line, sizeof line, f) != nullptr);
    std::fclose(f);
    CHECK(std::string(line) == "--rank " + std::to_string(r) + "\n");
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("a rank killed by a signal is reported, and a rank that then hangs is killed after the grace") {
  bench::LaunchOptions o;
  o.grace = 300ms;
  const auto t0 = std::chrono::steady_clock::now();
  // Rank 1 dies by SIGKILL (as a process killed mid-run); rank 0 never notices and sleeps on.
  const auto exits = bench::launch_ranks(shell("if [ $2 = 1 ]; then kill -9 $$; fi; exec sleep 30"), 2, o);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  REQUIRE(exits.size() == 2);
  CHECK(exits[1].signal == 9);
  CHECK_FALSE(exits[1].hung);
  CHECK(bench::describe(exits[1]).find("was ended by signal 9") != std::string::npos);
  CHECK(exits[0].hung);
  CHECK_FALSE(exits[0].ok());
  CHECK(bench::describe(exits[0]).find("was still running") != std::string::npos);
  CHECK(seconds < 10.0);  // not the 30 s sleep
}

TEST_CASE("a survivor that reports the lost rank and exits is not killed") {
  bench::LaunchOptions o;
  o.grace = 5000ms;
  const auto exits = bench::launch_ranks(shell("if [ $2 = 1 ]; then kill -9 $$; fi; sleep 0.2; exit 3"), 2, o);
  CHECK(exits[1].signal == 9);
  CHECK(exits[0].code == 3);
  CHECK_FALSE(exits[0].hung);
}

TEST_CASE("the deadline kills every rank still running") {
  bench::LaunchOptions o;
  o.deadline = 300ms;
  const auto exits = bench::launch_ranks(shell("exec sleep 30"), 3, o);
  REQUIRE(exits.size() == 3);
  for (const auto& e : exits) CHECK(e.hung);
  CHECK_THROWS_WITH_AS(bench::launch_ranks({"/nonexistent/moejit_ep_nccl"}, 2, o),
                       doctest::Contains("cannot start rank 0 (/nonexistent/moejit_ep_nccl)"), std::runtime_error);
  CHECK_THROWS_WITH_AS(bench::launch_ranks(shell("true"), 0, o), doctest::Contains("ranks = 0 is outside [1, 64]"),
                       std::invalid_argument);
}

TEST_CASE("SIGTERM to the launcher kills its ranks, then ends the launcher by SIGTERM") {
  const std::filesystem::path dir = scratch_dir();
  const pid_t launcher = fork();
  REQUIRE(launcher >= 0);
  if (launcher == 0) {
    std::signal(SIGTERM, SIG_DFL);  // as a launcher has it (doctest's crash handler is the test's own)
    bench::launch_ranks(shell("echo $$ > " + dir.string() + "/pid$2.tmp && mv " + dir.string() + "/pid$2.tmp " +
                              dir.string() + "/pid$2; exec sleep 100"),
                        2, {});
    _exit(7);  // only if SIGTERM did not end the launcher
  }
  auto rank_pid = [&](int r) {
    std::FILE* f = std::fopen((dir / ("pid" + std::to_string(r))).c_str(), "r");
    if (!f) return pid_t(0);
    int pid = 0;
    const bool read = std::fscanf(f, "%d", &pid) == 1;
    std::fclose(f);
    return read ? pid_t(pid) : pid_t(0);
  };
  for (int i = 0; i < 500 && (!rank_pid(0) || !rank_pid(1)); ++i) std::this_thread::sleep_for(10ms);
  const pid_t r0 = rank_pid(0), r1 = rank_pid(1);
  REQUIRE(r0 > 0);
  REQUIRE(r1 > 0);
  REQUIRE(::kill(launcher, SIGTERM) == 0);
  int status = 0;
  for (int i = 0; i < 500 && waitpid(launcher, &status, WNOHANG) == 0; ++i) std::this_thread::sleep_for(10ms);
  CHECK(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGTERM);
  // The ranks were killed and reaped by the launcher: their pids are gone.
  CHECK((::kill(r0, 0) == -1 && errno == ESRCH));
  CHECK((::kill(r1, 0) == -1 && errno == ESRCH));
  if (::kill(r0, 0) == 0) ::kill(r0, SIGKILL);  // never leave a sleeper behind a failed check
  if (::kill(r1, 0) == 0) ::kill(r1, SIGKILL);
  std::filesystem::remove_all(dir);
}

TEST_CASE("the all-to-all baseline's rank sum builds for the GPUs the bench runs on") {
  // Compiled at the bench's start on the 2-GPU machine: a compile error there would cost that lease's call.
  for (const codegen::Arch arch : {codegen::Arch::sm_90a, codegen::Arch::sm_120a}) {
    const std::vector<char> cubin = bench::rank_sum_cubin(codegen::Target{arch});
    REQUIRE(cubin.size() > 4);
    CHECK(std::string(cubin.data() + 1, 3) == "ELF");
  }
}

TEST_CASE("the unique-id file: published whole, awaited with a timeout, another size refused") {
  const std::filesystem::path dir = scratch_dir();
  const std::string path = (dir / "nccl-id").string();
  CHECK_THROWS_WITH_AS(bench::await_id(path, 128, 50ms), doctest::Contains("did not appear within 50 ms"),
                       std::runtime_error);
  std::vector<unsigned char> id(128);
  for (std::size_t i = 0; i < id.size(); ++i) id[i] = static_cast<unsigned char>(i * 7 + 1);
  std::thread writer([&] {
    std::this_thread::sleep_for(100ms);
    bench::publish_id(path, id);
  });
  const std::vector<unsigned char> got = bench::await_id(path, 128, 5000ms);
  writer.join();
  CHECK(got == id);
  // Only the id is left in the folder (the temporary file was renamed into place).
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) files += entry.is_regular_file();
  CHECK(files == 1);
  CHECK_THROWS_WITH_AS(bench::await_id(path, 64, 50ms), doctest::Contains("holds 128 bytes, not an NCCL unique id"),
                       std::runtime_error);
  CHECK_THROWS_WITH_AS(bench::publish_id((dir / "no" / "such" / "id").string(), id), doctest::Contains("cannot create"),
                       std::runtime_error);
  std::filesystem::remove_all(dir);
}

TEST_CASE("NVLink counters without NVML: nothing, and the reason, before any driver call") {
  if (void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL)) {
    dlclose(lib);
    MESSAGE("skipped: NVML is present (the counters are read on the GPU machine)");
    return;
  }
  std::string why;
  CHECK_FALSE(bench::NvlinkCounters::open(0, &why).has_value());
  CHECK_MESSAGE(why.find("cannot load libnvidia-ml.so.1") != std::string::npos, why);
}

TEST_CASE("a watchdog left armed past its timeout ends the process with its code and says what did not complete") {
  const std::filesystem::path dir = scratch_dir();
  const std::string err = (dir / "stderr").string();
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    std::freopen(err.c_str(), "w", stderr);
    {
      bench::Watchdog quick(5000ms, "a step that completes", 4);  // disarmed in time: nothing happens
    }
    bench::Watchdog w(100ms, "the test's barrier", 3);
    std::this_thread::sleep_for(5000ms);
    _exit(0);
  }
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 3);
  std::FILE* f = std::fopen(err.c_str(), "r");
  REQUIRE(f);
  char line[256] = {};
  CHECK(std::fgets(line, sizeof line, f) != nullptr);
  std::fclose(f);
  CHECK(std::string(line).find("moejit_ep_nccl: the test's barrier did not complete within 100 ms: a rank did not "
                               "arrive") == 0);
  std::filesystem::remove_all(dir);
}
