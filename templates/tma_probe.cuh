#pragma once
// TMA probe: three 2D TensorMaps, each copied by one bulk tensor load into
// shared memory against a single mbarrier, then written out in order. It
// gives the tensormap-by-value pass real compiler output with several map
// formals: every map is read by exactly two instructions (a descriptor
// prefetch and the copy), the count the pass asserts. sm_90a and later
// (cp.async.bulk.tensor needs PTX >= 8.0).
//
// The maps arrive as `const void*` (the kernel ABI in codegen/kernel_spec.hpp)
// and reach the inline asm as generic addresses: of global memory in the
// pointer ABI, of the kernel's parameter space once the pass has made them
// by-value formals. Either is a legal tensorMap operand.

#include "mx_types.cuh"

namespace moejit {

__device__ __forceinline__ u32 tma_probe_smem_addr(const void* p) {
  u32 addr;
  asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(addr) : "l"(p));
  return addr;
}

__device__ __forceinline__ void tma_probe_load_2d(const void* map, u32 dst, u32 bar, int x, int y) {
  asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<u64>(map)) : "memory");
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];" ::"r"(
          dst),
      "l"(reinterpret_cast<u64>(map)), "r"(bar), "r"(x), "r"(y)
      : "memory");
}

// Tile (tile_x, tile_y) of each map, kBoxRows x kBoxCols bytes, to
// out[map][row][col].
template <int kBoxCols, int kBoxRows>
__device__ __forceinline__ void tma_probe(const void* map_a, const void* map_b, const void* map_c, u8* __restrict__ out,
                                          u32 tile_x, u32 tile_y) {
  constexpr u32 kBoxBytes = kBoxCols * kBoxRows;
  __shared__ __align__(128) u8 tiles[3][kBoxBytes];
  __shared__ __align__(8) u64 bar;
  const u32 bar_addr = tma_probe_smem_addr(&bar);
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(bar_addr) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar_addr), "r"(3 * kBoxBytes)
                 : "memory");
    const void* maps[3] = {map_a, map_b, map_c};
#pragma unroll
    for (int m = 0; m < 3; ++m)
      tma_probe_load_2d(maps[m], tma_probe_smem_addr(tiles[m]), bar_addr, int(tile_x * kBoxCols),
                        int(tile_y * kBoxRows));
  }
  u32 done = 0;
  while (!done)
    asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], 0; selp.u32 %0, 1, 0, p; }"
                 : "=r"(done)
                 : "r"(bar_addr)
                 : "memory");
  for (u32 i = threadIdx.x; i < 3 * kBoxBytes; i += blockDim.x) out[i] = tiles[i / kBoxBytes][i % kBoxBytes];
}

}  // namespace moejit
