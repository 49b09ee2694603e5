// Does compute-sanitizer's racecheck see mbarrier synchronization? A minimal
// kernel with the compute role's shared-memory handoff: a producer warp
// fills a stage (st.shared, or cp.async completing on the barrier), arrives on
// `full`; a consumer warp waits on `full`, reads, arrives on `empty`; the
// producer waits on `empty` before it refills the stage. The handoff is
// correct (the host checks every value), yet racecheck reports the reads
// against the writes, as it does for moe_compute's stage ring. The control,
// the same handoff ordered by __syncthreads, reports nothing.
//
// `tail` adds moe_compute's end of a forward to the lane-0 handoff: each warp reconverges (__syncwarp),
// __syncthreads, thread 0 publishes whether its CTA was the grid's last out in a shared word, __syncthreads, and
// every thread reads the word. Racecheck reported that word's write against its reads in moe_compute
// (bench/results/2026-12-06-h100-s82-racecheck-and-b1-prologue.md); this shows whether the pattern alone does.
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
  // kWarpRelease: the consumer warp releases a stage with one arrival (lane 0, after __syncwarp), as
  // moe_compute's release_stage did until faa5a55; it now has every thread arrive (after a __syncwarp), and
  // racecheck lists nothing on it (bench/results/2026-12-07-h100-s89-s93-every-thread-release.md).
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

// The producer warp's lane 0 alone fills each stage (full counts 1), as moe_compute's weight producer runs its
// loop; the consumer warp releases it with one arrival. Then the forward's end, as moe_compute_run.cuh has it.
__global__ void tail(const int* in, int* out, unsigned* done, int* last) {
  __shared__ int slot[kStages][32], scratch;
  __shared__ uint64_t full[kStages], empty[kStages];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (threadIdx.x == 0)
    for (int s = 0; s < kStages; ++s) mbar_init(&full[s], 1), mbar_init(&empty[s], 1);
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  __syncthreads();
  for (int r = 0; r < kRounds; ++r) {
    const int s = r % kStages;
    const unsigned phase = (r / kStages) & 1u;
    if (warp == 0) {
      if (lane == 0) {
        mbar_wait(&empty[s], phase ^ 1u);
        for (int i = 0; i < 32; ++i) slot[s][i] = in[r * 32 + i];
        mbar_arrive(&full[s]);
      }
    } else {
      mbar_wait(&full[s], phase);
      out[(blockIdx.x * kRounds + r) * 32 + lane] = slot[s][lane];
      __syncwarp();
      if (lane == 0) mbar_arrive(&empty[s]);
    }
  }
  __syncwarp();
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();
    scratch = atomicAdd(done, 1) == gridDim.x - 1;
  }
  __syncthreads();
  if (scratch) {
    __threadfence();
    if (threadIdx.x == 0) *done = 0, *last = blockIdx.x;
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
  constexpr int kBlocks = 8;
  std::vector<int> tail_got(kBlocks * n);
  int *tail_out, *last;
  unsigned* done;
  cudaMalloc(&tail_out, kBlocks * n * 4);
  cudaMalloc(&done, 4);
  cudaMalloc(&last, 4);
  cudaMemset(done, 0, 4);
  cudaMemset(last, 0xFF, 4);
  cudaMemset(tail_out, 0xFF, kBlocks * n * 4);
  tail<<<kBlocks, 64>>>(in, tail_out, done, last);
  if (cudaDeviceSynchronize() != cudaSuccess) return 2;
  cudaMemcpy(tail_got.data(), tail_out, kBlocks * n * 4, cudaMemcpyDeviceToHost);
  int bad = 0, last_block = -1;
  unsigned done_after = 1;
  for (int i = 0; i < kBlocks * n; ++i) bad += tail_got[i] != host[i % n];
  cudaMemcpy(&last_block, last, 4, cudaMemcpyDeviceToHost);
  cudaMemcpy(&done_after, done, 4, cudaMemcpyDeviceToHost);
  std::printf("%-30s %d of %d values wrong; last CTA %d, counter %u after\n", "lane-0 handoff + tail:", bad,
              kBlocks * n, last_block, done_after);
  failures += bad != 0 || last_block < 0 || done_after != 0;
  return failures ? 1 : 0;
}
