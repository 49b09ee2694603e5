#pragma once
// Runs the smoke kernel on random MXFP4 blocks and compares every output
// element with its CPU twin (codegen::smoke_reference). Used by the GPU smoke test.

#include <cstdint>
#include <string>

#include "runtime/loaded_kernel.hpp"

namespace moejit::oracle {

struct SmokeCheckResult {
  std::uint64_t elements = 0;
  std::uint64_t mismatches = 0;
  std::uint64_t unwritten = 0;  // still holding the poison pattern
  std::string first_mismatch;   // "element i: got 0x.., want 0x.." or empty
  double millis = 0;            // kernel time (CUDA events)
};

// `n_blocks` MXFP4 blocks of 32 elements, payload and scales drawn from `seed`.
SmokeCheckResult run_smoke_check(const runtime::LoadedKernel& kernel, std::uint32_t n_blocks, std::uint64_t seed);

}  // namespace moejit::oracle
