// SM partitions on a GPU: R green-context partitions of the driver's SMs, each
// running the SM probe on its own stream at the same time; every CTA of a
// partition lands on that partition's SMs, and no SM serves two partitions.
#include <doctest/doctest.h>

#include <memory>
#include <set>
#include <vector>

#include "codegen/sm_probe_kernel.hpp"
#include "codegen/target.hpp"
#include "jit/kernel_builder.hpp"
#include "runtime/device.hpp"
#include "runtime/driver_api.hpp"
#include "runtime/loaded_kernel.hpp"
#include "runtime/sm_partitions.hpp"

using namespace moejit;

TEST_CASE("SM partitions (green contexts): R = 2 and 4 parts of disjoint SMs, each running on its own stream") {
  const runtime::DeviceInfo dev = runtime::query_device(0);
  const auto target = codegen::parse_target(dev.target_name());
  REQUIRE(target.has_value());
  runtime::ScopedContext primary(0);
  const jit::BuildArtifacts built = jit::build_kernel(codegen::sm_probe_spec(*target));
  for (int parts : {2, 4}) {
    CAPTURE(parts);
    runtime::SmPartitions partitions(0, parts);
    REQUIRE(partitions.size() == parts);
    MESSAGE(parts << " partitions of " << partitions.shape().sms_per_part << " SMs (" << partitions.shape().unused_sms
                  << " unused) on " << dev.sm_count << " SMs");
    // Four CTAs per SM of the partition, each resident 20 us: all partitions' launches overlap in time.
    const int grid = 4 * partitions.shape().sms_per_part;
    std::vector<runtime::DeviceBuffer> outs;
    std::vector<std::unique_ptr<runtime::LoadedKernel>> kernels;
    for (int p = 0; p < parts; ++p) outs.emplace_back(sizeof(std::uint32_t) * grid);  // in the primary context
    for (int p = 0; p < parts; ++p) {
      CHECK(partitions.sm_count(p) == partitions.shape().sms_per_part);
      // The kernel loads into part p's context, where its stream lives.
      MOEJIT_CU(cuCtxSetCurrent, partitions.context(p));
      kernels.push_back(std::make_unique<runtime::LoadedKernel>(built.cubin, built.spec.entry_name()));
      MOEJIT_CU(cuMemsetD8Async, outs[p].ptr(), 0xFF, sizeof(std::uint32_t) * grid, partitions.stream(p));
    }
    for (int p = 0; p < parts; ++p) {
      MOEJIT_CU(cuCtxSetCurrent, partitions.context(p));
      CUdeviceptr out = outs[p].ptr();
      std::uint32_t spin_ns = 20000;
      CUdeviceptr no_clock = 0;
      void* args[] = {&out, &spin_ns, &no_clock};
      kernels[p]->launch(runtime::LaunchDims{static_cast<unsigned>(grid), 32, 0}, partitions.stream(p), args);
    }
    std::set<std::uint32_t> seen;
    for (int p = 0; p < parts; ++p) {
      CAPTURE(p);
      MOEJIT_CU(cuStreamSynchronize, partitions.stream(p));
      std::vector<std::uint32_t> sms(grid);
      MOEJIT_CU(cuMemcpyDtoH, sms.data(), outs[p].ptr(), sizeof(std::uint32_t) * grid);
      const std::set<std::uint32_t> mine(sms.begin(), sms.end());
      CHECK(mine.count(0xFFFFFFFFu) == 0);  // every CTA ran
      CHECK(mine.size() <= static_cast<size_t>(partitions.shape().sms_per_part));
      for (std::uint32_t sm : mine) {
        CHECK(sm < static_cast<std::uint32_t>(dev.sm_count));
        CHECK_MESSAGE(seen.insert(sm).second, "SM " << sm << " served two partitions");
      }
    }
    MOEJIT_CU(cuCtxSetCurrent, primary.get());
  }
}
