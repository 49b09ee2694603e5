// Buffers in a virtual-memory reservation mapped from many physical chunks back to back, as PyTorch's
// expandable segments hand them out: cuMemGetAddressRange answers for the one chunk that holds a pointer, so a
// layer that measured a buffer by it alone refused any tensor longer than the rest of its chunk.
// The VMM entry points come from the libcuda the runtime loaded (moejit never links libcuda).
#include <dlfcn.h>
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "gpu_test_util.hpp"
#include "oracle/moe_check.hpp"

using namespace moejit;
using gpu_test::cosine_vs_reference;
using gpu_test::DeviceInputs;
using gpu_test::download_sync;

namespace {

template <class F>
F cuda_symbol(const char* name) {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  REQUIRE(lib != nullptr);
  const auto f = reinterpret_cast<F>(dlsym(lib, name));
  dlclose(lib);  // the runtime's own handle keeps it loaded
  const bool found = f != nullptr;
  REQUIRE_MESSAGE(found, name);
  return f;
}

// Device memory of the current context's GPU, as cuMemCreate allocates it.
CUmemAllocationProp device_memory() {
  CUdevice dev = 0;
  MOEJIT_CU(cuCtxGetDevice, &dev);
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location = {CU_MEM_LOCATION_TYPE_DEVICE, static_cast<int>(dev)};
  return prop;
}

std::size_t chunk_bytes() {
  const CUmemAllocationProp prop = device_memory();
  std::size_t g = 0;
  runtime::check_cu(cuda_symbol<decltype(&cuMemGetAllocationGranularity)>("cuMemGetAllocationGranularity")(
                        &g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
                    "cuMemGetAllocationGranularity");
  return g;
}

// Physical allocations of chunk_bytes() each, mapped back to back from the start of a reservation one chunk
// longer, `bytes` of them at least: the last chunk's addresses are reserved and never mapped.
class ChunkedReservation {
 public:
  explicit ChunkedReservation(std::size_t bytes) : prop_(device_memory()), chunk_(chunk_bytes()) {
    const std::size_t chunks = (bytes + chunk_ - 1) / chunk_;
    reserved_ = (chunks + 1) * chunk_;
    check(reserve_(&base_, reserved_, 0, 0, 0), "cuMemAddressReserve");
    try {
      for (std::size_t i = 0; i < chunks; ++i) {
        CUmemGenericAllocationHandle h = 0;
        check(create_(&h, chunk_, &prop_, 0), "cuMemCreate");
        handles_.push_back(h);
        check(map_(base_ + i * chunk_, chunk_, 0, h, 0), "cuMemMap");
        mapped_ += chunk_;
      }
      const CUmemAccessDesc access{prop_.location, CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
      check(access_(base_, mapped_, &access, 1), "cuMemSetAccess");
    } catch (...) {
      release();
      throw;
    }
  }
  ~ChunkedReservation() { release(); }
  ChunkedReservation(const ChunkedReservation&) = delete;
  ChunkedReservation& operator=(const ChunkedReservation&) = delete;

  CUdeviceptr base() const { return base_; }
  std::size_t chunk() const { return chunk_; }
  std::size_t mapped() const { return mapped_; }

 private:
  static void check(CUresult r, const char* call) { runtime::check_cu(r, call); }
  void release() {
    for (std::size_t at = 0; at < mapped_; at += chunk_) unmap_(base_ + at, chunk_);
    for (CUmemGenericAllocationHandle h : handles_) release_(h);
    if (base_) free_(base_, reserved_);
    mapped_ = 0, base_ = 0;
    handles_.clear();
  }
  decltype(&cuMemAddressReserve) reserve_ = cuda_symbol<decltype(&cuMemAddressReserve)>("cuMemAddressReserve");
  decltype(&cuMemCreate) create_ = cuda_symbol<decltype(&cuMemCreate)>("cuMemCreate");
  decltype(&cuMemMap) map_ = cuda_symbol<decltype(&cuMemMap)>("cuMemMap");
  decltype(&cuMemSetAccess) access_ = cuda_symbol<decltype(&cuMemSetAccess)>("cuMemSetAccess");
  decltype(&cuMemUnmap) unmap_ = cuda_symbol<decltype(&cuMemUnmap)>("cuMemUnmap");
  decltype(&cuMemRelease) release_ = cuda_symbol<decltype(&cuMemRelease)>("cuMemRelease");
  decltype(&cuMemAddressFree) free_ = cuda_symbol<decltype(&cuMemAddressFree)>("cuMemAddressFree");
  CUmemAllocationProp prop_;
  std::size_t chunk_, reserved_ = 0, mapped_ = 0;
  CUdeviceptr base_ = 0;
  std::vector<CUmemGenericAllocationHandle> handles_;
};

// Places buffers in a reservation so that each crosses a chunk boundary: it starts half its length (256-byte
// aligned) before the next boundary.
struct Straddler {
  std::size_t chunk, cursor = 0;
  std::size_t place(std::size_t bytes) {
    const std::size_t boundary = (cursor / chunk + 1) * chunk;
    const std::size_t at = std::max(cursor, (boundary - std::min(boundary, bytes / 2)) / 256 * 256);
    cursor = (at + bytes + 255) / 256 * 256;
    return at;
  }
};

std::size_t answered_bytes(CUdeviceptr p) {
  CUdeviceptr base = 0;
  std::size_t size = 0;
  MOEJIT_CU(cuMemGetAddressRange, &base, &size, p);
  return base + size - p;
}

}  // namespace

TEST_CASE("buffers over many chunks of one virtual-memory reservation are accepted; bytes past an allocation are not") {
  runtime::ScopedContext ctx(0);
  const codegen::MoeConfig config = gpu_test::small_config("vmm", 32, 4, 1024, 512);
  const reference::MoeProblem p = oracle::problem_of(config);
  const oracle::RandomWeights w = oracle::random_weights(p, gpu_test::seed() ^ 0x7A11ull);
  constexpr int B = 8;
  CUstream s = nullptr;
  MOEJIT_CU(cuStreamCreate, &s, CU_STREAM_NON_BLOCKING);
  DeviceInputs in(p, B);
  const oracle::RandomInputs h = oracle::random_inputs(p, B, oracle::RoutingKind::uniform, gpu_test::seed() + 71);
  in.upload(h, s);

  // What the same inputs give from cuMemAlloc buffers and the layer's own workspace.
  std::vector<std::uint16_t> want;
  std::int64_t workspace_bytes = 0;
  {
    runtime::MoeLayer plain(config, w.device(), {});
    MOEJIT_CU(cuMemsetD8Async, in.y.ptr(), 0xFF, in.y.bytes(), s);
    plain.forward(in.args(B), s);
    want = download_sync(in.y, s);
    CHECK(cosine_vs_reference(w, p, h, want) >= 0.99999);
    workspace_bytes = plain.workspace_bytes();
    plain.release_stream(s);
  }

  // W1 (16 MiB: many chunks), x_q, y and the caller's workspace, each across a chunk boundary.
  const std::size_t chunk = chunk_bytes();
  Straddler at{.chunk = chunk, .cursor = chunk / 2};
  const std::size_t w1_at = at.place(w.w1.bytes()), xq_at = at.place(in.xq.bytes()), y_at = at.place(in.y.bytes()),
                    ws_at = at.place(static_cast<std::size_t>(workspace_bytes));
  ChunkedReservation r(at.cursor);
  MESSAGE((r.mapped() / r.chunk()) << " chunks of " << r.chunk() << " B mapped back to back; W1 " << w.w1.bytes()
                                   << " B, workspace " << workspace_bytes << " B");
  const CUdeviceptr w1 = r.base() + w1_at, xq = r.base() + xq_at, y = r.base() + y_at, ws = r.base() + ws_at;
  // What the driver tells of a pointer in the second chunk (the walk keys on RANGE_START_ADDR).
  for (const auto& [name, what] : {std::pair{"RANGE_START_ADDR", CU_POINTER_ATTRIBUTE_RANGE_START_ADDR},
                                   {"RANGE_SIZE", CU_POINTER_ATTRIBUTE_RANGE_SIZE},
                                   {"MAPPING_BASE_ADDR", CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR},
                                   {"MAPPING_SIZE", CU_POINTER_ATTRIBUTE_MAPPING_SIZE}}) {
    std::uint64_t v = 0;
    const CUresult e = runtime::driver().cuPointerGetAttribute(&v, what, r.base() + chunk + 64);
    MESSAGE(std::string(name) << ": "
                              << (e == CUDA_SUCCESS ? fmt::format("0x{:x} (base 0x{:x})", v, r.base()) : "error"));
  }
  // The premise: the driver answers for one chunk, less than each buffer.
  CHECK(answered_bytes(w1) < w.w1.bytes());
  CHECK(answered_bytes(y) < in.y.bytes());
  CHECK(answered_bytes(ws) < static_cast<std::size_t>(workspace_bytes));
  MOEJIT_CU(cuMemcpyDtoDAsync, w1, w.w1.ptr(), w.w1.bytes(), s);
  MOEJIT_CU(cuMemcpyDtoDAsync, xq, in.xq.ptr(), in.xq.bytes(), s);
  MOEJIT_CU(cuMemsetD8Async, ws, 0, static_cast<std::size_t>(workspace_bytes), s);
  MOEJIT_CU(cuMemsetD8Async, y, 0xFF, in.y.bytes(), s);
  MOEJIT_CU(cuStreamSynchronize, s);

  runtime::CheckpointWeightsDevice weights = w.device();
  weights.w1 = w1;
  runtime::MoeLayer layer(config, weights, {});
  runtime::MoeForwardArgs a = in.args(B, ws);
  a.x_q = xq;
  a.y = y;
  layer.forward(a, s);
  std::vector<std::uint16_t> got(want.size());
  MOEJIT_CU(cuStreamSynchronize, s);
  MOEJIT_CU(cuMemcpyDtoH, got.data(), y, in.y.bytes());
  CHECK(got == want);

  // y running past the last mapped chunk into addresses only reserved.
  runtime::MoeForwardArgs tail = a;
  tail.y = r.base() + r.mapped() - in.y.bytes() / 2;
  CHECK_THROWS_WITH_AS(layer.forward(tail, s), doctest::Contains("y = 0x"), runtime::InvalidInput);

  // y running from one cuMemAlloc allocation into the next one, adjacent in the address space: two allocations,
  // not one buffer.
  std::vector<runtime::DeviceBuffer> blocks;
  CUdeviceptr seam = 0;
  for (int i = 0; i < 16 && !seam; ++i) {
    blocks.emplace_back(std::size_t(2) << 20);
    const runtime::DeviceBuffer& last = blocks.back();
    for (const runtime::DeviceBuffer& b : blocks) {  // the new block right after an older one, or right before it
      if (b.ptr() + b.bytes() == last.ptr()) seam = last.ptr();
      if (last.ptr() + last.bytes() == b.ptr()) seam = b.ptr();
    }
  }
  if (seam) {
    runtime::MoeForwardArgs split = in.args(B);
    split.y = seam - in.y.bytes() / 2;
    CHECK(answered_bytes(split.y) == in.y.bytes() / 2);
    CHECK_THROWS_WITH_AS(layer.forward(split, s), doctest::Contains("y = 0x"), runtime::InvalidInput);
  } else {
    WARN_MESSAGE(seam, "no two of 16 allocations of 2 MiB were adjacent: the seam check did not run");
  }
  layer.release_stream(s);
  MOEJIT_CU(cuStreamDestroy, s);
}
