#include <doctest/doctest.h>

#include <cstdlib>
#include <string>

#include "runtime/driver_api.hpp"
#include "runtime/moe_layer_detail.hpp"

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

namespace {
// A virtual-memory reservation at 0x10000 with three regions mapped back to back (0x1000 B each), a cuMemAlloc
// allocation right after it at 0x13000 (its own reservation), a gap, and one more region at 0x20000 of the first
// reservation: what cuMemGetAddressRange and RANGE_START_ADDR see of PyTorch's expandable segments. Past 0x20000
// and at 0x31000 (a second reservation's second region) the driver fails, as one that cannot tell.
struct Region {
  CUdeviceptr start, reserved;
};
constexpr Region k_regions[] = {{0x10000, 0x10000}, {0x11000, 0x10000}, {0x12000, 0x10000}, {0x13000, 0x13000},
                                {0x20000, 0x10000}, {0x30000, 0x30000}, {0x31000, 0x30000}};
const Region* region_of(CUdeviceptr p) {
  for (const Region& r : k_regions)
    if (p >= r.start && p < r.start + 0x1000) return &r;
  return nullptr;
}
CUresult fake_range(CUdeviceptr* base, std::size_t* size, CUdeviceptr p) {
  if (p == 0xdead || p == 0x21000) return CUDA_ERROR_NOT_INITIALIZED;  // a driver that cannot tell, also mid-walk
  const Region* r = region_of(p);
  if (!r) return CUDA_ERROR_INVALID_VALUE;
  *base = r->start, *size = 0x1000;
  return CUDA_SUCCESS;
}
CUresult fake_attribute(void* data, CUpointer_attribute what, CUdeviceptr p) {
  if (p == 0x31000) return CUDA_ERROR_INVALID_CONTEXT;
  const Region* r = region_of(p);
  if (!r || what != CU_POINTER_ATTRIBUTE_RANGE_START_ADDR) return CUDA_ERROR_INVALID_VALUE;
  *static_cast<CUdeviceptr*>(data) = r->reserved;
  return CUDA_SUCCESS;
}
}  // namespace

TEST_CASE("device memory is measured across the regions of one reservation mapped back to back") {
  CUresult error = CUDA_SUCCESS;
  auto held = [&](CUdeviceptr p, std::uint64_t want) {
    return detail::device_bytes_from(p, want, fake_range, fake_attribute, &error);
  };
  // One region answered: a tensor over three was refused as "not device memory holding its bytes".
  CHECK(held(0x10800, 0x2000) == 0x2800);
  CHECK(error == CUDA_SUCCESS);
  CHECK(held(0x10800, 0x100) == 0x800);      // one answer is enough
  CHECK(held(0x11000, 0x100000) == 0x2000);  // not into the allocation that follows the reservation
  CHECK(held(0x13000, 0x100000) == 0x1000);  // nor from that allocation into the gap
  CHECK(held(0x14000, 1) == 0);
  CHECK(error == CUDA_ERROR_INVALID_VALUE);
  CHECK(held(0xdead, 1) == 0);
  CHECK(error ==
        CUDA_ERROR_NOT_INITIALIZED);  // require_device_bytes reports this one as the driver's, not the caller's
  // A driver failure mid-walk is the driver's too, not a short buffer of the caller's.
  CHECK(held(0x20800, 0x1000) == 0x800);  // the next region's range query fails
  CHECK(error == CUDA_ERROR_NOT_INITIALIZED);
  CHECK(held(0x30800, 0x1000) == 0x800);  // the next region's reservation query fails
  CHECK(error == CUDA_ERROR_INVALID_CONTEXT);
  CHECK(held(0x10800, 0x800) == 0x800);  // enough in the first region: nothing more asked
  CHECK(error == CUDA_SUCCESS);
  CHECK(detail::not_device_memory(CUDA_ERROR_INVALID_VALUE));
  CHECK(detail::not_device_memory(CUDA_ERROR_NOT_FOUND));
  CHECK_FALSE(detail::not_device_memory(CUDA_ERROR_NOT_INITIALIZED));
}
