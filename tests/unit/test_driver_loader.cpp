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
