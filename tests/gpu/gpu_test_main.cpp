// GPU tests: without a CUDA driver or GPU they report "skipped" (exit 77, which
// ctest shows as skipped), never "passed".
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>
#include <fmt/format.h>

#include "runtime/device.hpp"

int main(int argc, char** argv) {
  std::string why;
  if (!moejit::runtime::try_driver(&why)) {
    fmt::print("skipped: no CUDA driver found ({})\n", why);
    return 77;
  }
  if (moejit::runtime::device_count() == 0) {
    fmt::print("skipped: the CUDA driver sees no GPU\n");
    return 77;
  }
  doctest::Context context(argc, argv);
  return context.run();
}
