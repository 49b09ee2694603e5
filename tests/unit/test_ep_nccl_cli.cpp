// moejit_ep_nccl as a user runs it, without a GPU: its help, its refusals
// (the option, its value and the range, exit 2), and --launch on a machine
// without a driver: skipped (77) before any rank is started.
#include <doctest/doctest.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "cache_test_util.hpp"
#include "runtime/driver_api.hpp"

using namespace moejit;
using moejit::test::TempDir;

namespace {
test::ProcessResult ep_nccl(const TempDir& scratch, std::vector<std::string> args) {
  args.insert(args.begin(), MOEJIT_EP_NCCL);
  return test::run_process(args, {}, scratch);
}
bool has(const std::string& text, const std::string& needle) {
  return text.find(needle) != std::string::npos;
}
}  // namespace

TEST_CASE("moejit_ep_nccl --help names its commands, process modes and exit codes") {
  TempDir scratch;
  const auto r = ep_nccl(scratch, {"--help"});
  CHECK(r.exit_code == 0);
  for (const char* s : {"check", "bench", "soak", "--launch R", "--single-process R", "--die-rank",
                        "--peers window|ipc", "MOEJIT_NCCL_LIBRARY", "3 a rank was lost"})
    CHECK_MESSAGE(has(r.output, s), s);
}

TEST_CASE("moejit_ep_nccl refuses bad options by name, value and range, before any GPU or file") {
  TempDir scratch;
  struct Case {
    std::vector<std::string> args;
    const char* says;
  };
  for (const Case& c : std::vector<Case>{
           {{"check"}, "give exactly one of --launch R"},
           {{"--launch", "2"}, "no command"},
           {{"check", "--launch", "1"}, "--launch 1 is outside [2, 64]"},
           {{"check", "--launch", "2", "--batches", "1,999"}, "--batches 999 is outside [1, 256]"},
           {{"check", "--launch", "2", "--routings", "6"}, "--routings 6 is outside [0, 5]"},
           {{"check", "--launch", "2", "--model", "llama"}, "--model llama is not one of glm5.2, dsv4.1-flash"},
           {{"check", "--launch", "2", "--peers", "shm"}, "--peers shm is not one of window, ipc"},
           {{"bench", "--launch", "2", "--die-rank", "1", "--die-after", "3"}, "--die-rank is a soak option"},
           {{"soak", "--single-process", "2", "--die-rank", "1", "--die-after", "3"}, "not --single-process"},
           {{"soak", "--launch", "2", "--die-rank", "2", "--die-after", "3"}, "--die-rank 2 is outside [0, 2)"},
           {{"soak", "--launch", "2", "--die-rank", "1"}, "--die-rank needs --die-after n"},
           {{"soak", "--launch", "2", "--die-rank", "1", "--die-after", "200"},
            "--die-after 200 must be below --forwards 200"},
           {{"soak", "--launch", "2", "--die-rank", "1", "--die-after", "3", "--peers", "ipc"},
            "--die-rank needs --peers window"},
           {{"check", "--launch", "2", "--deadline-s", "0"}, "--deadline-s 0 is outside [1, 86400]"},
           {{"check", "--rank", "0", "--ranks", "2"}, "--rank needs --ranks R (2..64) and --id-file F"},
           {{"check", "--rank", "2", "--ranks", "2", "--id-file", "f"}, "--rank 2 is outside [0, 2)"},
           {{"check", "--launch", "2", "--timeout-ms", "0"}, "--timeout-ms 0 is outside [1, 600000]"},
           {{"check", "--launch", "2", "--seed", "x"}, "--seed x is not a whole number"},
           {{"check", "--launch", "2", "--frobnicate"}, "unknown argument --frobnicate"}}) {
    CAPTURE(c.says);
    const auto r = ep_nccl(scratch, c.args);
    CHECK(r.exit_code == 2);
    CHECK_MESSAGE(has(r.output, c.says), r.output);
  }
}

TEST_CASE("moejit_ep_nccl --launch without a GPU driver: skipped (77) before any process or file") {
  if (runtime::try_driver()) {
    MESSAGE("skipped: a CUDA driver is present (the 2-GPU runs are the GPU session's)");
    return;
  }
  TempDir scratch;
  const auto t0 = std::chrono::steady_clock::now();
  const auto r = ep_nccl(scratch, {"check", "--launch", "2", "--model", "glm5.2", "--batches", "1"});
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK(r.exit_code == 77);
  CHECK_MESSAGE(has(r.output, "moejit_ep_nccl: skipped: no CUDA driver"), r.output);
  CHECK_FALSE(has(r.output, "rank 0 (pid "));  // no rank was started
  CHECK(seconds < 30.0);
  // A rank alone (as an engine's launcher starts it) skips the same way, before it writes the id file.
  const std::string id = scratch / "nccl-id";
  const auto rank0 = ep_nccl(scratch, {"check", "--rank", "0", "--ranks", "2", "--id-file", id});
  CHECK(rank0.exit_code == 77);
  CHECK_FALSE(std::filesystem::exists(id));
}
