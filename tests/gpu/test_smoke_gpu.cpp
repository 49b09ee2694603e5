#include <doctest/doctest.h>

#include <random>

#include "codegen/smoke_kernel.hpp"
#include "jit/kernel_builder.hpp"
#include "oracle/smoke_check.hpp"
#include "runtime/device.hpp"
#include "runtime/loaded_kernel.hpp"

using namespace moejit;

TEST_CASE("smoke kernel: compile, cuLibraryLoadData, launch, every element matches the CPU") {
  const runtime::DeviceInfo dev = runtime::query_device(0);
  MESSAGE("device: " << dev.name << ", " << dev.sm_count << " SMs");
  const auto target = codegen::parse_target(dev.target_name());
  REQUIRE_MESSAGE(target.has_value(), "unsupported GPU " << dev.name);
  runtime::ScopedContext ctx(0);
  const codegen::KernelSpec spec = codegen::smoke_kernel_spec(*target);
  const jit::BuildArtifacts built = jit::build_kernel(spec);
  runtime::LoadedKernel kernel(built.cubin, spec.entry_name());
  // Sizes that end mid-block-of-threads and beyond one grid-stride sweep.
  for (std::uint32_t blocks : {1u, 255u, 4097u, 1u << 20, (1u << 22) + 3}) {
    const std::uint64_t seed = std::random_device{}();
    CAPTURE(blocks);
    CAPTURE(seed);
    const oracle::SmokeCheckResult r = oracle::run_smoke_check(kernel, blocks, seed);
    CHECK(r.elements == 32ull * blocks);
    CHECK_MESSAGE(r.mismatches == 0, r.first_mismatch);
    CHECK(r.unwritten == 0);
  }
}
