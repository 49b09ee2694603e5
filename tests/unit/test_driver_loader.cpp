#include <doctest/doctest.h>

#include <cstdlib>
#include <string>

#include "runtime/driver_api.hpp"

using namespace moejit::runtime;

TEST_CASE("without a driver, whatever needs the GPU says so and nothing crashes") {
  std::string why;
  if (try_driver(&why) != nullptr) {
    MESSAGE("a CUDA driver is present; the no-driver path is covered by the CLI tests with MOEJIT_FORCE_NO_DRIVER");
    CHECK(driver().driver_version > 0);
    return;
  }
  CHECK(!why.empty());
  CHECK_THROWS_WITH_AS(driver(), doctest::Contains("no CUDA driver found"), NoDriverError);
}

TEST_CASE("a failed driver call names the call") {
  // check_cu formats without a driver too (then without the CUDA error string).
  CHECK_THROWS_WITH_AS(check_cu(CUDA_ERROR_OUT_OF_MEMORY, "cuMemAlloc"), doctest::Contains("cuMemAlloc failed: "),
                       DriverError);
  CHECK_NOTHROW(check_cu(CUDA_SUCCESS, "cuMemAlloc"));
}

TEST_CASE("a call that reports an earlier kernel's fault says that the fault was earlier") {
  // moejit_bench_ep once stopped with "cuKernelGetFunction failed: CUDA_ERROR_LAUNCH_FAILED": a trap in the
  // forward before it, reported by the next call that checked.
  for (const CUresult r : {CUDA_ERROR_LAUNCH_FAILED, CUDA_ERROR_ILLEGAL_ADDRESS, CUDA_ERROR_ASSERT})
    CHECK_THROWS_WITH_AS(check_cu(r, "cuKernelGetFunction"),
                         doctest::Contains("a kernel launched earlier on this context faulted"), DriverError);
  try {
    check_cu(CUDA_ERROR_OUT_OF_MEMORY, "cuMemAlloc");
    FAIL("check_cu returned on an error");
  } catch (const DriverError& e) {
    CHECK(std::string(e.what()).find("faulted") == std::string::npos);  // its own failure, not an earlier one
  }
}
