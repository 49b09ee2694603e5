#pragma once
// SM probe: each CTA writes the SM it ran on (%smid). Tells where a launch's
// CTAs landed, e.g. that the CTAs of each green-context partition stay on
// their own SMs (runtime/sm_partitions.hpp).

#include "mx_types.cuh"

namespace moejit {

// The CTA stays resident for `spin_ns` so a launch of many CTAs spreads over
// every SM it may use, rather than a few SMs retiring CTAs one after another.
template <int kThreads>
__device__ __forceinline__ void sm_probe(u32* __restrict__ out, u32 spin_ns) {
  if (threadIdx.x != 0) return;
  u32 sm;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
  u64 start;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  for (u64 now = start; now - start < spin_ns;) asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  out[blockIdx.x] = sm;
}

}  // namespace moejit
