#pragma once
// Thin inline-PTX wrappers shared by the MoE role kernels: mbarriers, the bulk
// copy engine (TMA), ldmatrix, fences and acquire/release counters. Each is
// one instruction or a fixed idiom, so the PTX passes can count them.

#include "mx_types.cuh"

namespace moejit {

__device__ __forceinline__ u32 smem_addr(const void* p) {
  return static_cast<u32>(__cvta_generic_to_shared(p));
}

// ---- mbarrier -------------------------------------------------------------
__device__ __forceinline__ void mbar_init(u64* bar, u32 count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(bar)), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_expect_tx(u64* bar, u32 bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_addr(bar)), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_arrive(u64* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_addr(bar)) : "memory");
}
// With a suspend-time hint the waiting warp sleeps until the phase completes
// (or the hint's 0.1 ms pass) instead of spinning: a producer that spun here
// issued 14% of the compute role's instructions (ncu, exact path, B = 256),
// slots its consumers' issue-bound loops needed.
__device__ __forceinline__ bool mbar_try_wait(u64* bar, u32 phase) {
  u32 done;
  asm volatile(
      "{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2, 100000;\n selp.u32 %0, 1, 0, p;\n}\n"
      : "=r"(done)
      : "r"(smem_addr(bar)), "r"(phase)
      : "memory");
  return done != 0;
}
__device__ __forceinline__ void mbar_wait(u64* bar, u32 phase) {
  while (!mbar_try_wait(bar, phase)) {
  }
}
__device__ __forceinline__ void fence_barrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

// ---- bulk copies (TMA) ----------------------------------------------------
// 2D tensor tile -> shared, completing on `bar`. `tmap` is the generic address
// of the 128-byte descriptor (a by-value kernel parameter after the
// tensormap-by-value pass).
__device__ __forceinline__ void tma_load_2d(void* dst, const void* tmap, u64* bar, int c0, int c1) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];" ::"r"(
          smem_addr(dst)),
      "l"(tmap), "r"(smem_addr(bar)), "r"(c0), "r"(c1)
      : "memory");
}
// The same with an L2 cache policy (createpolicy).
__device__ __forceinline__ void tma_load_2d_hint(void* dst, const void* tmap, u64* bar, int c0, int c1, u64 policy) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1, {%3, "
      "%4}], [%2], %5;" ::"r"(smem_addr(dst)),
      "l"(tmap), "r"(smem_addr(bar)), "r"(c0), "r"(c1), "l"(policy)
      : "memory");
}
__device__ __forceinline__ u64 evict_first_policy() {
  u64 policy;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
  return policy;
}
// Per-thread 16-byte (L2 only) and 4-byte global -> shared copies. Their
// completion is signalled to an mbarrier by cp_async_track.
__device__ __forceinline__ void cp_async_16(void* dst, const void* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(smem_addr(dst)), "l"(src) : "memory");
}
// The 16-byte copy to a shared address with a source size: 0 reads nothing and
// fills the chunk with zeros, so a column past the tile's rows needs no branch.
__device__ __forceinline__ void cp_async_16_zfill(u32 dst, const void* src, u32 src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(src), "r"(src_bytes) : "memory");
}
__device__ __forceinline__ void cp_async_4(void* dst, const void* src) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" ::"r"(smem_addr(dst)), "l"(src) : "memory");
}
// Holds `bar`'s current phase open until this thread's earlier cp.async
// copies have landed (without .noinc: a net-zero arrival, so the thread still
// arrives itself).
__device__ __forceinline__ void cp_async_track(u64* bar) {
  asm volatile("cp.async.mbarrier.arrive.shared::cta.b64 [%0];" ::"r"(smem_addr(bar)) : "memory");
}
__device__ __forceinline__ void prefetch_tensormap(const void* tmap) {
  asm volatile("prefetch.tensormap [%0];" ::"l"(tmap) : "memory");
}

__device__ __forceinline__ int ld_acquire_gpu(const int* p) {
  int v;
  asm volatile("ld.acquire.gpu.global.s32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
// A load that skips L1: data another SM wrote after this SM may have cached the line.
__device__ __forceinline__ float4 ld_cg4(const float4* p) {
  float4 v;
  asm volatile("ld.global.cg.v4.f32 {%0, %1, %2, %3}, [%4];" : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "l"(p));
  return v;
}
// threadIdx.x, read anew: values derived from it are computed where they are used, not kept in registers from
// the start of the kernel.
__device__ __forceinline__ int fresh_thread_index() {
  int v;
  asm volatile("mov.u32 %0, %%tid.x;" : "=r"(v));
  return v;
}
__device__ __forceinline__ void st_release_gpu(int* p, int v) {
  asm volatile("st.release.gpu.global.s32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
// Shared memory written by the generic proxy (cp.async, st.shared) is about
// to be read by the async proxy (wgmma operands).
__device__ __forceinline__ void fence_proxy_async_shared() {
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}
__device__ __forceinline__ void red_release_gpu_add(int* p, int v) {
  asm volatile("red.release.gpu.global.add.s32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
// Programmatic dependent launch (sm_90+). Both are no-ops unless the launch
// carried the programmatic-serialization attribute (or a programmatic graph edge).
// wait: the prerequisite grid has completed and its writes are visible.
__device__ __forceinline__ void griddep_wait() {
  asm volatile("griddepcontrol.wait;" ::: "memory");
}
// launch_dependents: this CTA no longer holds back the dependent grid's launch.
__device__ __forceinline__ void griddep_launch_dependents() {
  asm volatile("griddepcontrol.launch_dependents;" :::);
}
// Nanoseconds (ComputeParams::trace).
__device__ __forceinline__ u64 globaltimer() {
  u64 t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
// A value every lane of the warp holds, as lane 0's: ptxas can then prove a
// branch on it warp-uniform, which it requires around wgmma (a branch it
// cannot prove uniform makes it serialize every wgmma of the kernel).
__device__ __forceinline__ int warp_uniform(int v) {
  return __shfl_sync(0xFFFFFFFFu, v, 0);
}
// blockIdx.x, read where it is used: the compiler keeps the special register
// live across the consumers' loops otherwise, where it spills.
__device__ __forceinline__ int cta_index() {
  int v;
  asm volatile("mov.u32 %0, %%ctaid.x;" : "=r"(v));
  return v;
}
__device__ __forceinline__ void named_barrier_sync(u32 id, u32 threads) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

// ---- ldmatrix / mma -------------------------------------------------------
__device__ __forceinline__ void ldmatrix_x4(u32 (&r)[4], const void* row_addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(row_addr)));
}

// D += A (16x16 bf16, row) * B (16x8 bf16, col), FP32 accumulate; d points at the
// four accumulators of one n8 group (callers index register arrays with constants).
__device__ __forceinline__ void mma_bf16_m16n8k16(float* d, const u32 (&a)[4], u32 b0, u32 b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ u32 bf16x2_mul(u32 a, u32 b) {
  u32 d;
  asm("mul.rn.bf16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  return d;
}

}  // namespace moejit
