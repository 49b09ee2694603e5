#include "oracle/smoke_check.hpp"

#include <fmt/format.h>

#include <random>
#include <vector>

#include "codegen/smoke_kernel.hpp"
#include "runtime/device.hpp"

namespace moejit::oracle {

using runtime::DeviceBuffer;
using runtime::driver;

SmokeCheckResult run_smoke_check(const runtime::LoadedKernel& kernel, std::uint32_t n_blocks, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::uint8_t> payload(16ull * n_blocks), scales(n_blocks);
  for (auto& b : payload) b = static_cast<std::uint8_t>(rng());
  // Every finite UE8M0 exponent, subnormal results included; 0xFF (NaN) is not a weight scale.
  for (auto& s : scales) s = static_cast<std::uint8_t>(rng() % 255);
  const std::vector<std::uint16_t> want = codegen::smoke_reference(payload, scales);

  DeviceBuffer d_payload(payload.size()), d_scales(scales.size()), d_out(want.size() * 2);
  d_payload.upload(payload);
  d_scales.upload(scales);
  // Poison: 0xFFFF is a NaN pattern the kernel never writes (its NaNs are 0x7FC0/0xFFC0 only
  // for NaN scales, which are excluded above), so an unwritten element cannot pass.
  constexpr std::uint16_t k_poison = 0xFFFF;
  std::vector<std::uint16_t> got(want.size(), k_poison);
  d_out.upload(got);

  CUstream stream = nullptr;
  MOEJIT_CU(cuStreamCreate, &stream, CU_STREAM_NON_BLOCKING);
  CUevent start = nullptr, stop = nullptr;
  MOEJIT_CU(cuEventCreate, &start, CU_EVENT_DEFAULT);
  MOEJIT_CU(cuEventCreate, &stop, CU_EVENT_DEFAULT);
  CUdeviceptr p = d_payload.ptr(), s = d_scales.ptr(), o = d_out.ptr();
  std::uint32_t n = n_blocks;
  void* args[] = {&p, &s, &o, &n};
  const unsigned threads = static_cast<unsigned>(codegen::k_smoke_threads);
  const unsigned grid = std::max(1u, std::min(1024u, (n_blocks + threads - 1) / threads));
  MOEJIT_CU(cuEventRecord, start, stream);
  kernel.launch(runtime::LaunchDims{grid, threads, 0}, stream, args);
  MOEJIT_CU(cuEventRecord, stop, stream);
  MOEJIT_CU(cuStreamSynchronize, stream);
  SmokeCheckResult r;
  float ms = 0;
  MOEJIT_CU(cuEventElapsedTime, &ms, start, stop);
  r.millis = ms;
  driver().cuEventDestroy(start);
  driver().cuEventDestroy(stop);
  driver().cuStreamDestroy(stream);

  d_out.download(got);
  r.elements = want.size();
  for (size_t i = 0; i < want.size(); ++i) {
    if (got[i] == want[i]) continue;
    if (got[i] == k_poison) ++r.unwritten;
    if (r.mismatches++ == 0)
      r.first_mismatch = fmt::format("element {}: got 0x{:04x}, want 0x{:04x}", i, got[i], want[i]);
  }
  return r;
}

}  // namespace moejit::oracle
