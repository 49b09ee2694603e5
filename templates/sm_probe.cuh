#pragma once
// SM probe: each CTA writes the SM it ran on (%smid). Tells where a launch's
// CTAs landed, e.g. that the CTAs of each green-context partition stay on
// their own SMs (runtime/sm_partitions.hpp); and, with `clock`, the SM clock
// over the spin: a consumer-bound kernel's time scales with it, and leases
// differ (the benches print it beside their times).

#include "mx_types.cuh"

namespace moejit {

// The CTA stays resident for `spin_ns` so a launch of many CTAs spreads over
// every SM it may use, rather than a few SMs retiring CTAs one after another.
// clock (nullable): [grid][2] u32, the SM cycles (%clock64) and the ns
// (%globaltimer) the spin took.
template <int kThreads>
__device__ __forceinline__ void sm_probe(u32* __restrict__ out, u32 spin_ns, u32* __restrict__ clock) {
  if (threadIdx.x != 0) return;
  u32 sm;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
  u64 start, cycles0, cycles1, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  asm volatile("mov.u64 %0, %%clock64;" : "=l"(cycles0));
  for (now = start; now - start < spin_ns;) asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  asm volatile("mov.u64 %0, %%clock64;" : "=l"(cycles1));
  out[blockIdx.x] = sm;
  if (clock) {
    clock[2 * blockIdx.x] = u32(cycles1 - cycles0);
    clock[2 * blockIdx.x + 1] = u32(now - start);
  }
}

}  // namespace moejit
