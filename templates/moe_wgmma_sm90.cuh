#pragma once
// sm_90a wgmma: the fence, commit and wait around an asynchronous group, the operand fences that keep
// ptxas from moving register reads across it, the 128B-swizzled SMEM descriptor, and the E4M3 issue of
// m64nNk32 (A from registers, B from SMEM) for N = 8..64.

#include "moe_ptx.cuh"

namespace moejit {

__device__ __forceinline__ void wgmma_fence() {
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
}
__device__ __forceinline__ void wgmma_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}
template <int kPending>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(kPending) : "memory");
}
// Keeps the compiler from moving accumulator reads or writes across a wgmma
// boundary it cannot see (the instruction is asynchronous).
template <int kCount>
__device__ __forceinline__ void fence_operands(float (&v)[kCount]) {
#pragma unroll
  for (int i = 0; i < kCount; ++i) asm volatile("" : "+f"(v[i])::"memory");
}
// The same for A fragments: they must be complete before wgmma.fence, or
// ptxas inserts its own fence after them (and serializes, if that is on a branch).
__device__ __forceinline__ void fence_operands(u32 (&a)[4]) {
#pragma unroll
  for (int i = 0; i < 4; ++i) asm volatile("" : "+r"(a[i])::"memory");
}
__device__ __forceinline__ void fence_operands(u32 (&a)[4][4]) {
#pragma unroll
  for (int j = 0; j < 4; ++j)
#pragma unroll
    for (int i = 0; i < 4; ++i) asm volatile("" : "+r"(a[j][i])::"memory");
}

// Shared-memory matrix descriptor of a K-major, 128B-swizzled operand whose
// 8-row groups are 1024 bytes apart, as its two words. The high word (the
// 1024-byte stride, the swizzle mode) is the same for every operand here, and
// a start address moves only the low word's 14-bit address field (shared
// memory is under 256 KiB, so it never carries): the loops add 32-bit offsets
// to the low word, and the wgmma pairs it with the constant, instead of
// 64-bit adds and two uniform-register moves per wgmma.
constexpr u32 kSw128DescHi = (1024 >> 4) | (1u << 30);
__device__ __forceinline__ u32 sw128_desc_lo(u32 smem_byte_addr) {
  return ((smem_byte_addr & 0x3FFFFu) >> 4) | (1u << 16);
}

// D (64 x N, FP32, overwritten: scale-d = 0) = A (64 x 32 E4M3, registers) * B (N x 32 E4M3, SMEM at the
// descriptor whose low word is desc_lo).
template <int N>
struct Wgmma;
template <>
struct Wgmma<8> {
  __device__ static void issue(float (&d)[4], const u32 (&a)[4], u32 desc_lo) {
    asm volatile(
        "{\n .reg .pred p;\n .reg .b64 d;\n setp.ne.b32 p, %10, 0;\n mov.b64 d, {%8, %9};\n"
        "wgmma.mma_async.sync.aligned.m64n8k32.f32.e4m3.e4m3 {%0, %1, %2, %3}, {%4, %5, %6, %7}, d, p, 1, 1;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(desc_lo), "r"(kSw128DescHi), "n"(0));
  }
};
template <>
struct Wgmma<16> {
  __device__ static void issue(float (&d)[8], const u32 (&a)[4], u32 desc_lo) {
    asm volatile(
        "{\n .reg .pred p;\n .reg .b64 d;\n setp.ne.b32 p, %14, 0;\n mov.b64 d, {%12, %13};\n"
        "wgmma.mma_async.sync.aligned.m64n16k32.f32.e4m3.e4m3 {%0, %1, %2, %3, %4, %5, %6, %7}, "
        "{%8, %9, %10, %11}, d, p, 1, 1;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(desc_lo), "r"(kSw128DescHi), "n"(0));
  }
};
template <>
struct Wgmma<32> {
  __device__ static void issue(float (&d)[16], const u32 (&a)[4], u32 desc_lo) {
    asm volatile(
        "{\n .reg .pred p;\n .reg .b64 d;\n setp.ne.b32 p, %22, 0;\n mov.b64 d, {%20, %21};\n"
        "wgmma.mma_async.sync.aligned.m64n32k32.f32.e4m3.e4m3 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, "
        "%12, %13, %14, %15}, {%16, %17, %18, %19}, d, p, 1, 1;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]),
          "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(desc_lo), "r"(kSw128DescHi), "n"(0));
  }
};
template <>
struct Wgmma<64> {
  __device__ static void issue(float (&d)[32], const u32 (&a)[4], u32 desc_lo) {
    asm volatile(
        "{\n .reg .pred p;\n .reg .b64 d;\n setp.ne.b32 p, %38, 0;\n mov.b64 d, {%36, %37};\n"
        "wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e4m3 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, "
        "%12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
        "{%32, %33, %34, %35}, d, p, 1, 1;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]),
          "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]),
          "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]),
          "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(desc_lo), "r"(kSw128DescHi), "n"(0));
  }
};

}  // namespace moejit
