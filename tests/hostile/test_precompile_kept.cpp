// Item 5 of issue 15: precompile exited 0 when its kernels were not kept (a
// cache directory that cannot be written, a full file system, or all but one
// evicted by MOEJIT_CACHE_MAX_BYTES), and a fleet that deployed after that
// "success" failed under MOEJIT_NO_JIT=1. Now success means every kernel is in
// the cache; otherwise precompile exits 1 naming how many are missing and why.
#include <doctest/doctest.h>
#include <sys/resource.h>

#include "codegen/smoke_kernel.hpp"
#include "hostile_util.hpp"
#include "jit/kernel_cache.hpp"

using namespace moejit;
using moejit::test::TempDir;

namespace {
// Two smoke kernels (one per target), one at a time.
const std::vector<std::string> k_precompile = {"precompile", "--targets", "sm_90a,sm_120a", "--jobs", "1"};

// What a deploy does next: load both kernels with MOEJIT_NO_JIT=1.
bool strict_loads_both(const std::string& dir) {
  std::vector<std::string> warnings;
  cache::Config config = test::quiet_config(dir, &warnings);
  config.no_jit = true;
  jit::KernelCache kc(config);
  try {
    for (codegen::Arch arch : {codegen::Arch::sm_90a, codegen::Arch::sm_120a})
      kc.get_or_build(codegen::smoke_kernel_spec(codegen::Target{arch}));
  } catch (const cache::StrictMissError&) {
    return false;
  }
  return true;
}
}  // namespace

TEST_CASE("item 5: precompile into a cache directory that cannot be written exits 1, naming why") {
  TempDir scratch;
  test::write_text(scratch / "file", "a regular file where a folder should be");
  const std::string dir = scratch / "file/cache";
  const test::CliResult r = test::moejit(scratch, dir, k_precompile);
  INFO(r.output);
  CHECK(r.exit_code == 1);
  CHECK(test::contains(r.output, "compiled          2\n"));
  CHECK(test::contains(r.output, "2 of 2 kernels are not in the cache at " + dir +
                                     "/v1: the cache cannot be written: "
                                     "cannot create " +
                                     dir));
  if (::geteuid() != 0) {  // root writes into a read-only folder regardless
    std::filesystem::create_directories(scratch / "ro");
    std::filesystem::permissions(scratch / "ro",
                                 std::filesystem::perms::owner_read | std::filesystem::perms::owner_exec);
    const test::CliResult ro = test::moejit(scratch, scratch / "ro/cache", k_precompile);
    CHECK(ro.exit_code == 1);
    CHECK(test::contains(ro.output, "kernels are not in the cache"));
  }
}

TEST_CASE("item 5: precompile on a file system that fills up exits 1") {
  TempDir scratch;
  const std::string dir = scratch / "cache", out = scratch / "full.out";
  const pid_t pid = ::fork();
  if (pid == 0) {
    const rlimit limit{20000, 20000};  // smaller than a cubin: the first write past it fails with EFBIG
    ::setrlimit(RLIMIT_FSIZE, &limit);
    ::signal(SIGXFSZ, SIG_IGN);
    ::setenv("MOEJIT_CACHE_DIR", dir.c_str(), 1);
    const int fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    std::vector<std::string> argv = {MOEJIT_BINARY};
    argv.insert(argv.end(), k_precompile.begin(), k_precompile.end());
    std::vector<char*> ptrs;
    for (std::string& a : argv) ptrs.push_back(a.data());
    ptrs.push_back(nullptr);
    ::execv(ptrs[0], ptrs.data());
    ::_exit(98);
  }
  const int rc = test::wait_within(pid, 300);
  const std::string output = test::read_text(out);
  INFO(output);
  CHECK(rc == 1);
  CHECK(test::contains(output, "2 of 2 kernels are not in the cache"));
  CHECK(test::contains(output, "File too large"));
  CHECK_FALSE(strict_loads_both(dir));
}

TEST_CASE("item 5: precompile whose kernels exceed MOEJIT_CACHE_MAX_BYTES exits 1 and says to raise the cap") {
  TempDir scratch;
  const std::string dir = scratch / "cache";
  const test::CliResult r = test::moejit(scratch, dir, k_precompile, {{"MOEJIT_CACHE_MAX_BYTES", "200K"}});
  INFO(r.output);
  CHECK(r.exit_code == 1);
  CHECK(test::contains(r.output, "1 of 2 kernels are not in the cache at " + dir +
                                     "/v1: 1 were evicted to keep the "
                                     "cache under its cap "
                                     "MOEJIT_CACHE_MAX_BYTES = 200.0 "
                                     "KiB"));
  CHECK_FALSE(strict_loads_both(dir));
  // With room for both, the same command succeeds and strict mode then finds both.
  const test::CliResult fits = test::moejit(scratch, dir, k_precompile, {{"MOEJIT_CACHE_MAX_BYTES", "1M"}});
  CHECK(fits.exit_code == 0);
  CHECK(strict_loads_both(dir));
}
