// What the H200's HBM gives a weight stream shaped like the compute role's:
// one producer lane per CTA issuing bulk copies into a ring of stages, one
// consumer warp releasing each stage as soon as it lands (no math), so the
// rate is the copy engine's and the memory system's alone. Beside it, a plain
// coalesced load loop (the ceiling a reduction reaches).
//
//   nvcc -O3 -std=c++17 -arch=sm_90a -o tma_stream_probe bench/tma_stream_probe.cu
//   ./tma_stream_probe            # a table: mode, stages, CTAs/SM, policy -> GB/s
//
// A step is what one K128 step of a 4-tile item loads: two 8704-byte pair
// blobs (contract::weight_step_offset), each from its own run that advances
// 8704 bytes per step, 48 steps per item (GLM5.2's GEMM1, K = 6144), items
// contiguous per CTA. Modes:
//   tensor2d  the role's copies today: a 2D tensor map over 256-byte rows, one 34-row box per pair blob
//   bulk1d    cp.async.bulk of each 8704-byte pair blob (no tensor map)
//   bulk1d-x1 one 17408-byte cp.async.bulk per step (a layout with a step's four tiles adjacent)
//   ldg       every thread of 8 warps loads 16 bytes per iteration, summed into a sink (no SMEM ring)
// Buffers: two of 4 GiB, alternated between launches (far past the 50 MB L2).
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "cuda_check.cuh"

constexpr int kPairBytes = 8704, kStepBytes = 2 * kPairBytes, kStepsPerItem = 48;
constexpr long long kItemBytes = (long long)kStepsPerItem * kStepBytes;

__device__ __forceinline__ unsigned smem(const void* p) {
  return unsigned(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void bar_init(uint64_t* b, unsigned n) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem(b)), "r"(n));
}
__device__ __forceinline__ void bar_expect(uint64_t* b, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem(b)), "r"(bytes) : "memory");
}
__device__ __forceinline__ void bar_arrive(uint64_t* b) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem(b)) : "memory");
}
__device__ __forceinline__ void bar_wait(uint64_t* b, unsigned parity) {
  unsigned done = 0;
  while (!done)
    asm volatile(
        "{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2, 100000;\n selp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(smem(b)), "r"(parity)
        : "memory");
}

enum Mode { kTensor2d = 0, kBulk1d = 1, kBulk1dX1 = 2 };

// One CTA streams `steps` steps of its contiguous region.
__global__ void ring_stream(const __grid_constant__ CUtensorMap map, const uint8_t* base, int mode, int stages,
                            long long steps, int evict_first, unsigned* sink) {
  extern __shared__ __align__(1024) uint8_t buf[];
  uint64_t* full = reinterpret_cast<uint64_t*>(buf + stages * kStepBytes);
  uint64_t* empty = full + stages;
  if (threadIdx.x == 0) {
    for (int s = 0; s < stages; ++s) bar_init(&full[s], 1), bar_init(&empty[s], 1);
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  const long long region = (long long)blockIdx.x * steps * kStepBytes;
  uint64_t policy;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
  if (threadIdx.x == 0) {
    for (long long i = 0; i < steps; ++i) {
      const int s = int(i % stages);
      const unsigned parity = unsigned(i / stages) & 1u;
      bar_wait(&empty[s], parity ^ 1u);
      bar_expect(&full[s], kStepBytes);
      const long long item = i / kStepsPerItem, kb = i % kStepsPerItem;
      uint8_t* dst = buf + s * kStepBytes;
      if (mode == kBulk1dX1) {
        const uint8_t* src = base + region + i * kStepBytes;
        if (evict_first)
          asm volatile(
              "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1], %2, [%3], "
              "%4;" ::"r"(smem(dst)),
              "l"(src), "r"(kStepBytes), "r"(smem(&full[s])), "l"(policy)
              : "memory");
        else
          asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                           smem(dst)),
                       "l"(src), "r"(kStepBytes), "r"(smem(&full[s]))
                       : "memory");
        continue;
      }
      for (int p = 0; p < 2; ++p) {
        const long long off = region + item * kItemBytes + (p * kStepsPerItem + kb) * (long long)kPairBytes;
        uint8_t* d = dst + p * kPairBytes;
        if (mode == kBulk1d) {
          if (evict_first)
            asm volatile(
                "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1], %2, "
                "[%3], %4;" ::"r"(smem(d)),
                "l"(base + off), "r"(kPairBytes), "r"(smem(&full[s])), "l"(policy)
                : "memory");
          else
            asm volatile(
                "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                    smem(d)),
                "l"(base + off), "r"(kPairBytes), "r"(smem(&full[s]))
                : "memory");
        } else {
          const int row = int(off / 256);
          if (evict_first)
            asm volatile(
                "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1, "
                "{%3, %4}], [%2], %5;" ::"r"(smem(d)),
                "l"(&map), "r"(smem(&full[s])), "r"(0), "r"(row), "l"(policy)
                : "memory");
          else
            asm volatile(
                "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], "
                "[%2];" ::"r"(smem(d)),
                "l"(&map), "r"(smem(&full[s])), "r"(0), "r"(row)
                : "memory");
        }
      }
    }
  } else if (threadIdx.x == 32) {
    unsigned acc = 0;
    for (long long i = 0; i < steps; ++i) {
      const int s = int(i % stages);
      bar_wait(&full[s], unsigned(i / stages) & 1u);
      acc += buf[s * kStepBytes + (i & 255)];
      bar_arrive(&empty[s]);
    }
    if (acc == 0x12345678u) *sink = acc;  // keeps the reads
  }
}

// Every thread loads 16 B per iteration from the CTA's contiguous region.
__global__ void ldg_stream(const uint4* base, long long per_cta, unsigned* sink) {
  const uint4* p = base + blockIdx.x * per_cta;
  unsigned acc = 0;
  for (long long i = threadIdx.x; i < per_cta; i += blockDim.x * 4) {
    uint4 v[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) v[u] = i + u * blockDim.x < per_cta ? __ldcs(p + i + u * blockDim.x) : uint4{};
#pragma unroll
    for (int u = 0; u < 4; ++u) acc ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
  }
  if (acc == 0x12345678u) *sink = acc;
}

using EncodeFn = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                              const cuuint64_t*, const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave,
                              CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

int main() {
  const size_t bytes = size_t(4) << 30;
  uint8_t* bufs[2];
  for (auto& b : bufs) {
    CHECK(cudaMalloc(&b, bytes));
    CHECK(cudaMemset(b, 0x5A, bytes));
  }
  unsigned* sink;
  CHECK(cudaMalloc(&sink, 4));
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  const int sms = prop.multiProcessorCount;
  EncodeFn encode = nullptr;
  cudaDriverEntryPointQueryResult q;
  CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", reinterpret_cast<void**>(&encode), 12000,
                                         cudaEnableDefault, &q));
  CUtensorMap maps[2];
  for (int i = 0; i < 2; ++i) {
    const cuuint64_t dims[2] = {256, bytes / 256}, strides[1] = {256};
    const cuuint32_t box[2] = {256, kPairBytes / 256}, es[2] = {1, 1};
    if (encode(&maps[i], CU_TENSOR_MAP_DATA_TYPE_UINT8, 2, bufs[i], dims, strides, box, es,
               CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
               CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) != CUDA_SUCCESS) {
      std::fprintf(stderr, "cuTensorMapEncodeTiled failed\n");
      return 1;
    }
  }
  cudaEvent_t e0, e1;
  CHECK(cudaEventCreate(&e0));
  CHECK(cudaEventCreate(&e1));
  auto timed = [&](auto launch, double moved) {
    for (int i = 0; i < 4; ++i) launch(i & 1);
    CHECK(cudaDeviceSynchronize());
    std::vector<float> ms;
    for (int i = 0; i < 12; ++i) {
      CHECK(cudaEventRecord(e0));
      launch(i & 1);
      CHECK(cudaEventRecord(e1));
      CHECK(cudaEventSynchronize(e1));
      float t;
      CHECK(cudaEventElapsedTime(&t, e0, e1));
      ms.push_back(t);
    }
    std::sort(ms.begin(), ms.end());
    return moved / (ms[ms.size() / 2] * 1e-3) / 1e9;
  };
  CHECK(cudaFuncSetAttribute(ring_stream, cudaFuncAttributeMaxDynamicSharedMemorySize, 227 * 1024));
  std::printf("device %s (%d SMs)\n", prop.name, sms);
  for (int threads : {256, 512}) {
    const int ctas = sms * 4;
    const long long per_cta = (long long)(bytes / 16) / ctas;
    const double gbs =
        timed([&](int b) { ldg_stream<<<ctas, threads>>>(reinterpret_cast<const uint4*>(bufs[b]), per_cta, sink); },
              double(per_cta) * 16 * ctas);
    std::printf("%-10s threads=%-4d ctas=%-4d                 %8.1f GB/s\n", "ldg", threads, ctas, gbs);
  }
  const char* names[] = {"tensor2d", "bulk1d", "bulk1d-x1"};
  for (int mode : {0, 1, 2})
    for (int per_sm : {1, 2, 3})
      for (int stages : {4, 6, 8, 10, 12})
        for (int ef : {1, 0}) {
          const size_t smem_bytes = size_t(stages) * kStepBytes + 16 * stages;
          if (smem_bytes * per_sm > 227 * 1024) continue;
          if (per_sm == 2 && ef == 0) continue;
          const int ctas = sms * per_sm;
          // Whole items per CTA, the same bytes for every configuration.
          const long long steps = (long long)(bytes / ctas / kItemBytes) * kStepsPerItem;
          const double gbs = timed(
              [&](int b) { ring_stream<<<ctas, 64, smem_bytes>>>(maps[b], bufs[b], mode, stages, steps, ef, sink); },
              double(steps) * kStepBytes * ctas);
          CHECK(cudaGetLastError());
          std::printf("%-10s stages=%-3d ctas/SM=%d evict_first=%d  %8.1f GB/s\n", names[mode], stages, per_sm, ef,
                      gbs);
        }
  return 0;
}
