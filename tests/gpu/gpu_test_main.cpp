// GPU tests: without a CUDA driver or GPU they report "skipped" (exit 77, which
// ctest shows as skipped), never "passed". Listing or counting the cases runs
// none and needs no GPU (tools/gpu_session.sh tests-par deals the cases out by
// name and counts what each shard matches).
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <string_view>

#include "runtime/device.hpp"

namespace {
bool query_only(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    while (a.starts_with('-')) a.remove_prefix(1);
    if (a.starts_with("dt-")) a.remove_prefix(3);
    for (std::string_view q : {"c", "count", "ltc", "list-test-cases", "lts", "list-test-suites", "h", "help", "?"})
      if (a == q) return true;
  }
  return false;
}
}  // namespace

int main(int argc, char** argv) {
  if (query_only(argc, argv)) return doctest::Context(argc, argv).run();
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
