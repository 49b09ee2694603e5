// Does compute-sanitizer's racecheck see mbarrier synchronization? A minimal
// kernel with the compute role's shared-memory handoff: a producer warp
// fills a stage (st.shared, or cp.async completing on the barrier), arrives on
// `full`; a consumer warp waits on `full`, reads, arrives on `empty`; the
// producer waits on `empty` before it refills the stage. The handoff is
// correct (the host checks every value), yet racecheck reports the reads
// against the writes, as it does for moe_compute's stage ring. The control,
// the same handoff ordered by __syncthreads, reports nothing.
//
//   nvcc -arch=sm_90a -O2 -o mbarrier_handoff mbarrier_handoff.cu
//   compute-sanitizer --tool racecheck ./mbarrier_handoff
#include <cstdint>
#include <cstdio>
#include <vector>

constexpr int kStages = 4, kRounds = 64;
enum Mode { kStShared = 0, kCpAsync = 1, kTrack = 2, kWarpRelease = 3, kSyncthreads = 4 };

__device__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
__device__ void mbar_init(uint64_t* b, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(b)), "r"(count) : "memory");
}
__device__ void mbar_arrive(uint64_t* b) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_addr(b)) : "memory");
}
__device__ void mbar_wait(uint64_t* b, unsigned phase) {
  asm volatile(
      "{\n .reg .pred done;\n wait:\n mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n @!done bra wait;\n}" ::
          "r"(smem_addr(b)),
      "r"(phase)
      : "memory");
}
__device__ void cp_async_4(void* dst, const void* src) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" ::"r"(smem_addr(dst)), "l"(src) : "memory");
}
__device__ void cp_async_arrive_noinc(uint64_t* b) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];" ::"r"(smem_addr(b)) : "memory");
}
// moe_compute's pattern: a net-zero tracking arrival (no .noinc), then the thread's own arrival.
__device__ void cp_async_track(uint64_t* b) {
  asm volatile("cp.async.mbarrier.arrive.shared::cta.b64 [%0];" ::"r"(smem_addr(b)) : "memory");
}

__global__ void handoff(const int* in, int* out, int mode) {
  __shared__ int slot[kStages][32], route[kStages][32];
  __shared__ uint64_t full[kStages], empty[kStages];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  // kWarpRelease: the consumer warp releases a stage with one arrival (lane 0, after __syncwarp),
  // as moe_compute's release_stage does.
  if (threadIdx.x == 0)
    for (int s = 0; s < kStages; ++s) mbar_init(&full[s], 32), mbar_init(&empty[s], mode == kWarpRelease ? 1 : 32);
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  __syncthreads();
  if (mode == kSyncthreads) {
    for (int r = 0; r < kRounds; ++r) {
      if (warp == 0) slot[r % kStages][lane] = in[r * 32 + lane];
      __syncthreads();
      if (warp == 1) out[r * 32 + lane] = slot[r % kStages][lane];
      __syncthreads();
    }
    return;
  }
  for (int r = 0; r < kRounds; ++r) {
    const int s = r % kStages;
    const unsigned phase = (r / kStages) & 1u;
    if (warp == 0) {
      mbar_wait(&empty[s], phase ^ 1u);
      if (mode == kCpAsync) {
        cp_async_4(&slot[s][lane], in + r * 32 + lane);
        cp_async_arrive_noinc(&full[s]);
      } else if (mode == kTrack || mode == kWarpRelease) {
        cp_async_4(&slot[s][lane], in + r * 32 + lane);
        route[s][lane] = r;  // like the route ids: a plain store in the same phase
        cp_async_track(&full[s]);
        mbar_arrive(&full[s]);
      } else {
        slot[s][lane] = in[r * 32 + lane];
        mbar_arrive(&full[s]);
      }
    } else {
      mbar_wait(&full[s], phase);
      out[r * 32 + lane] = slot[s][lane] + (mode == kTrack || mode == kWarpRelease ? route[s][lane] - r : 0);
      if (mode == kWarpRelease) {
        __syncwarp();
        if (lane == 0) mbar_arrive(&empty[s]);
      } else {
        mbar_arrive(&empty[s]);
      }
    }
  }
}

int main() {
  const int n = kRounds * 32;
  std::vector<int> host(n), got(n);
  for (int i = 0; i < n; ++i) host[i] = i * 7 + 1;
  int *in, *out;
  cudaMalloc(&in, n * 4);
  cudaMalloc(&out, n * 4);
  cudaMemcpy(in, host.data(), n * 4, cudaMemcpyHostToDevice);
  int failures = 0;
  for (int mode : {kStShared, kCpAsync, kTrack, kWarpRelease, kSyncthreads}) {
    cudaMemset(out, 0xFF, n * 4);
    handoff<<<1, 64>>>(in, out, mode);
    if (cudaDeviceSynchronize() != cudaSuccess) return 2;
    cudaMemcpy(got.data(), out, n * 4, cudaMemcpyDeviceToHost);
    int bad = 0;
    for (int i = 0; i < n; ++i) bad += got[i] != host[i];
    const char* names[] = {"st.shared + mbarrier:", "cp.async + arrive.noinc:", "cp.async + track + arrive:",
                           "... + warp release (lane 0):", "control, __syncthreads:"};
    std::printf("%-30s %d of %d values wrong\n", names[mode], bad, n);
    failures += bad != 0;
  }
  return failures ? 1 : 0;
}
