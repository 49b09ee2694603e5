// How fast the fast path's consumers can eat weights when nothing else
// limits them: the compute role's own K-loops (AtomSm90Fp8::mainloop for
// GEMM2, mainloop_split for GEMM1, from templates/), on a stage ring whose
// stages are always full (one producer lane only cycles the full/empty
// barriers; the data was written once), G consumer warpgroups of T 64-row
// tiles each, one CTA per SM on every SM. The question it answers: does the
// layer's issue-bound K-loop go faster with more consumer warps per SM, at
// the registers each configuration leaves a thread? Rows 28-33 run the unit
// schedule's step owners (AtomSm90Fp8::kloop_owned) the same way: can their
// loops stream B = 1's weights, whatever else holds the layer back? Row 34:
// GEMM1's paired rows (mainloop_paired), three warpgroups of two tiles. Rows
// 35-39: the layer's loops without the activation scale in the promotion, the
// ceiling of staging activations in one scale frame per token.
//
//   built as build/release/bench/moejit_kloop_probe (bench/CMakeLists.txt), or by hand:
//   nvcc -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a -I templates -o kloop_probe bench/kloop_probe.cu
//   ./kloop_probe [i]   # the table, or its row i alone: loop, N, G, T, registers
//                       # -> weights/clk/SM and the packed-weight GB/s
//
// GB/s counts the bytes the layer would stream for those weights (4352 per
// 64 x 128 step: E2M1 codes and UE8M0 scales), so it reads directly against
// the copy bandwidth (~4.2 TB/s on the H200): a loop below it cannot reach
// the floor whatever the schedule does.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "cuda_check.cuh"
#include "moe_atom_sm90_fp8.cuh"

using namespace moejit;

__device__ __forceinline__ u32 mix(u32 x) {
  x ^= x >> 16, x *= 0x7feb352dU, x ^= x >> 15, x *= 0x846ca68bU, x ^= x >> 16;
  return x;
}

// kInterleaved: each stage holds T tiles and warpgroup g consumes the stages
// k = g mod G (K-interleaved warpgroups, each summing its own partials);
// otherwise each stage holds G * T tiles and every warpgroup reads its T of
// every stage (today's CTA).
template <int G, int T, int N, bool kInterleaved>
struct ProbeLayout {
  static constexpr int kStages = kInterleaved ? 3 * G : 4;
  using Ring = StageRing<contract::kPathSm90Fp8, kInterleaved ? T : G * T, N, kStages>;
  static constexpr int kX = 0;  // 1024-aligned: the 128B swizzle's atom
  static constexpr int kW = kX + kStages * Ring::kXStageBytes;
  static constexpr int kXs = kW + kStages * Ring::kWBytes;
  static constexpr int kBars = (kXs + kStages * N * contract::kScaleRecordBytes + 7) / 8 * 8;
  static constexpr int kBytes = kBars + 3 * kStages * 8 + 1024;  // + alignment slack
};

// A warpgroup's place in the ring when it takes every G-th stage.
template <int kStages, int G>
struct StridedCursor {
  static_assert(kStages % G == 0, "each warpgroup's stages recur with one parity");
  int stage;
  u32 phase = 0;
  __device__ void advance() {
    stage += G;
    if (stage >= kStages) stage -= kStages, phase ^= 1u;
  }
};

// kRegs = 0: one producer warp, and every thread gets what the launch leaves
// (a scheduler's 16384 registers over its warps: 168 for today's 10 warps,
// 128 for 13, 96 for 17 or 20). kRegs > 0: the producer is a whole warpgroup that
// gives its registers back (setmaxnreg.dec to 24) and the consumers take
// kRegs (setmaxnreg.inc): how a CTA of three or four consumer warpgroups
// would keep the K-loop's registers.
template <int G, int kRegs>
constexpr int probe_threads() {
  return G * 128 + (kRegs ? 128 : 32);
}

// Every stage's data, written once: weights of random codes and scale codes 118..125, x of random E4M3 bytes
// but NaN, N x scale records of 2^-3..2^3 as FP32; then the barriers (`empty_arrivals` consumer threads a release:
// contract::stage_release_arrivals).
template <int kStages, int N, class Ring>
__device__ void fill_ring(const Ring& ring, int empty_arrivals) {
  for (int i = threadIdx.x; i < kStages * Ring::kWBytes / 4; i += blockDim.x) {
    const int in_step = (i * 4) % contract::kWeightStepBytes;
    const u32 h = mix(i * 2654435761u + blockIdx.x);
    reinterpret_cast<u32*>(ring.w)[i] = in_step < contract::kWeightPayloadBytes ? h : 0x76767676u + (h & 0x07070707u);
  }
  for (int i = threadIdx.x; i < kStages * Ring::kXStageBytes / 4; i += blockDim.x)
    reinterpret_cast<u32*>(ring.x)[i] = mix(i + 77) & 0x77777777u;
  for (int i = threadIdx.x; i < kStages * N * 4; i += blockDim.x)
    reinterpret_cast<float*>(ring.xs)[i] = __int_as_float((124 + int(mix(i) % 7u)) << 23);
  if (threadIdx.x == 0)
    for (int s = 0; s < kStages; ++s) {
      mbar_init(&ring.full_w[s], 1);
      mbar_init(&ring.full_x[s], 1);
      mbar_init(&ring.empty[s], empty_arrivals);
    }
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  __syncthreads();
}

// The producer lane: every step's stage, full again as soon as the consumers released it.
template <int kStages, class Ring>
__device__ void cycle_stages(const Ring& ring, int steps) {
  StageCursor<kStages> cur;
  for (int k = 0; k < steps; ++k) {
    mbar_wait(&ring.empty[cur.stage], cur.phase ^ 1u);
    mbar_arrive(&ring.full_w[cur.stage]);
    mbar_arrive(&ring.full_x[cur.stage]);
    cur.advance();
  }
}

template <int G, int T, int N, bool kSplit, int kRegs, bool kInterleaved, int kJ, bool kPaired, bool kTokenFrame>
__global__ void __launch_bounds__(probe_threads<G, kRegs>(), 1) probe(int steps, float* sink) {
  using L = ProbeLayout<G, T, N, kInterleaved>;
  using Ring = typename L::Ring;
  constexpr int kStages = L::kStages;
  using Atom = AtomSm90Fp8<false>;
  extern __shared__ u8 raw[];
  u8* smem = reinterpret_cast<u8*>((reinterpret_cast<uintptr_t>(raw) + 1023) & ~uintptr_t(1023));
  Ring ring{};
  ring.x = smem + L::kX;
  ring.w = smem + L::kW;
  ring.xs = reinterpret_cast<u32*>(smem + L::kXs);
  ring.full_w = reinterpret_cast<u64*>(smem + L::kBars);
  ring.full_x = ring.full_w + kStages;
  ring.empty = ring.full_x + kStages;
  fill_ring<kStages, N>(ring, contract::stage_release_arrivals(kInterleaved ? 1 : G));
  StageCursor<kStages> cur;
  if (threadIdx.x >= G * 128) {  // the producer
    if constexpr (kRegs > 0) asm volatile("setmaxnreg.dec.sync.aligned.u32 24;");
    if (threadIdx.x == G * 128) cycle_stages<kStages>(ring, steps);
    return;
  }
  if constexpr (kRegs > 0) asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(kRegs));
  float acc[T][N / 2];
#pragma unroll
  for (int u = 0; u < T; ++u)
#pragma unroll
    for (int i = 0; i < N / 2; ++i) acc[u][i] = 0.0f;
  if constexpr (kInterleaved) {
    // The atom reads tiles g*T.. of a stage for warpgroup g: this view puts that at the stage's tile 0.
    const int g = threadIdx.x / 128;
    Ring mine = ring;
    mine.w = ring.w - g * T * contract::kWeightStepBytes;
    StridedCursor<kStages, G> strided{g};
    if constexpr (kSplit)
      Atom::template mainloop_split<N, T>(acc, mine, strided, steps / G);
    else
      Atom::template mainloop<N, T>(acc, mine, strided, steps / G);
  } else {
    Atom::template kloop<N, T, kSplit, kJ, kPaired, kTokenFrame>(acc, ring, cur, steps);
  }
  float sum = 0.0f;
#pragma unroll
  for (int u = 0; u < T; ++u)
#pragma unroll
    for (int i = 0; i < N / 2; ++i) sum += acc[u][i];
  if (sum == 1.2345f) sink[blockIdx.x * blockDim.x + threadIdx.x] = sum;  // keeps the loop live
}

// The unit schedule's step owners at B = 1 (AtomSm90Fp8::kloop_owned): three consumer warpgroups, each stage
// one K128 step of the unit's four tiles, warpgroup w on steps k = w mod 3 (two passes of two tiles); every
// consumer thread releases every stage. 8 stages and 128 registers, as the layer plans them. GEMM1 on paired
// split rows, or GEMM2's one-step items (each step's sums taken and zeroed, as item_done does).
constexpr int kOwnerStages = 8, kOwnerThreads = 3 * 128 + 32;
using OwnerRing = StageRing<contract::kPathSm90Fp8, 4, 8, kOwnerStages>;
constexpr int kOwnerBars =
    (kOwnerStages * (OwnerRing::kXStageBytes + OwnerRing::kWBytes + 8 * contract::kScaleRecordBytes) + 7) / 8 * 8;
constexpr int kOwnerBytes = kOwnerBars + 3 * kOwnerStages * 8 + 1024;

template <bool kGemm2, int kJ>
__global__ void __maxnreg__(128) probe_owned(int steps, float* sink) {
  using Ring = OwnerRing;
  using Atom = AtomSm90Fp8<false>;
  extern __shared__ u8 raw[];
  u8* smem = reinterpret_cast<u8*>((reinterpret_cast<uintptr_t>(raw) + 1023) & ~uintptr_t(1023));
  Ring ring{};
  ring.x = smem;
  ring.w = smem + kOwnerStages * Ring::kXStageBytes;
  ring.xs = reinterpret_cast<u32*>(ring.w + kOwnerStages * Ring::kWBytes);
  ring.full_w = reinterpret_cast<u64*>(smem + kOwnerBars);
  ring.full_x = ring.full_w + kOwnerStages;
  ring.empty = ring.full_x + kOwnerStages;
  fill_ring<kOwnerStages, 8>(ring, contract::stage_release_arrivals(3));
  StageCursor<kOwnerStages> cur;
  if (threadIdx.x >= 3 * 128) {  // the producer
    if (threadIdx.x == 3 * 128) cycle_stages<kOwnerStages>(ring, steps);
    return;
  }
  float acc[2][2][4] = {};
  float taken = 0.0f;
  const int owner = warp_uniform(threadIdx.x / 128);
  auto take = [&](int, float(&a)[2][2][4]) {
#pragma unroll
    for (int p = 0; p < 2; ++p)
#pragma unroll
      for (int u = 0; u < 2; ++u)
#pragma unroll
        for (int i = 0; i < 4; ++i) taken += a[p][u][i], a[p][u][i] = 0.0f;
  };
  if constexpr (kGemm2)
    Atom::template kloop_owned<8, 2, false, kJ>(acc, ring, cur, steps, owner, take);
  else
    Atom::template kloop_owned<8, 2, true, kJ>(acc, ring, cur, steps, owner);
#pragma unroll
  for (int p = 0; p < 2; ++p)
#pragma unroll
    for (int u = 0; u < 2; ++u)
#pragma unroll
      for (int i = 0; i < 4; ++i) taken += acc[p][u][i];
  if (taken == 1.2345f) sink[blockIdx.x * blockDim.x + threadIdx.x] = taken;
}

struct Row {
  const char* loop;
  int k32_per_wait, n, g, t, regs;
  double weights_per_clk_sm, gbps;
  int spill_bytes;
};

// The median of 6 launches after a warm-up, in seconds.
template <class Launch>
double median_seconds(Launch launch) {
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  std::vector<float> ms;
  for (int rep = 0; rep < 7; ++rep) {
    CHECK(cudaEventRecord(a));
    launch();
    CHECK(cudaEventRecord(b));
    CHECK(cudaEventSynchronize(b));
    CHECK(cudaGetLastError());
    float t = 0;
    CHECK(cudaEventElapsedTime(&t, a, b));
    if (rep > 0) ms.push_back(t);
  }
  CHECK(cudaEventDestroy(a));
  CHECK(cudaEventDestroy(b));
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2] * 1e-3;
}

template <int G, int T, int N, bool kSplit, int kRegs, bool kInterleaved = false,
          int kJ = AtomSm90Fp8<false>::k32_per_wait<N, T, kSplit>(), bool kPaired = false, bool kTokenFrame = false>
Row run(int sms, double clock_ghz, float* sink) {
  using L = ProbeLayout<G, T, N, kInterleaved>;
  auto kernel = probe<G, T, N, kSplit, kRegs, kInterleaved, kJ, kPaired, kTokenFrame>;
  CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, L::kBytes));
  cudaFuncAttributes attr{};
  CHECK(cudaFuncGetAttributes(&attr, kernel));
  const int steps = 1024 / G * G;  // a stage for every warpgroup in turn (kInterleaved)
  const double sec = median_seconds([&] { kernel<<<sms, probe_threads<G, kRegs>(), L::kBytes>>>(steps, sink); });
  const int tiles = kInterleaved ? T : G * T;  // per stage
  const double weights = double(sms) * steps * tiles * 64 * 128;
  const double bytes = double(sms) * steps * tiles * contract::kWeightStepBytes;
  return {kPaired  ? (kTokenFrame ? "gemm1-pair-tf" : "gemm1-paired")
          : kSplit ? (kTokenFrame ? "gemm1-split-tf" : "gemm1-split")
                   : (kTokenFrame ? "gemm2-tf" : "gemm2"),
          kJ,
          N,
          G,
          T,
          kRegs ? kRegs : attr.numRegs,
          weights / (sec * clock_ghz * 1e9) / sms,
          bytes / sec * 1e-9,
          int(attr.localSizeBytes)};
}

template <bool kGemm2, int kJ>
Row run_owned(int sms, double clock_ghz, float* sink) {
  auto kernel = probe_owned<kGemm2, kJ>;
  CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kOwnerBytes));
  cudaFuncAttributes attr{};
  CHECK(cudaFuncGetAttributes(&attr, kernel));
  const int steps = 1020;  // a multiple of the three owners
  const double sec = median_seconds([&] { kernel<<<sms, kOwnerThreads, kOwnerBytes>>>(steps, sink); });
  const double weights = double(sms) * steps * 4 * 64 * 128;
  const double bytes = double(sms) * steps * 4 * contract::kWeightStepBytes;
  std::printf("# %s owners: %.3f us a 4-tile step\n", kGemm2 ? "gemm2" : "gemm1", sec * 1e6 / steps);
  return {kGemm2 ? "gemm2-owned" : "gemm1-owned",
          kJ,
          8,
          3,
          4,
          attr.numRegs,
          weights / (sec * clock_ghz * 1e9) / sms,
          bytes / sec * 1e-9,
          int(attr.localSizeBytes)};
}

static void print(const Row& r) {
  std::printf("%-12s %2d %3d %2d %2d %5d %6d %18.2f %10.0f\n", r.loop, r.k32_per_wait, r.n, r.g, r.t, r.regs,
              r.spill_bytes, r.weights_per_clk_sm, r.gbps);
  std::fflush(stdout);
}

int main(int argc, char** argv) {
  const int only = argc > 1 ? std::atoi(argv[1]) : -1;  // one configuration (its row number), or all
  int dev = 0, sms = 0, khz = 0;
  CHECK(cudaGetDevice(&dev));
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  CHECK(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, dev));
  const double ghz = khz * 1e-6;
  float* sink = nullptr;
  CHECK(cudaMalloc(&sink, 1 << 20));
  std::printf("# %d SMs, %.2f GHz (attribute); weights/clk/SM at that clock; GB/s of packed weights\n", sms, ghz);
  std::printf("%-12s %2s %3s %2s %2s %5s %6s %18s %10s\n", "loop", "kJ", "N", "G", "T", "regs", "spill",
              "weights/clk/SM", "GB/s");
  // Today's CTA: 2 consumer warpgroups of 2 tiles (168 registers). Then three
  // and four warpgroups, at what the launch leaves them (0) and with the
  // producer warpgroup's registers moved to the consumers.
  if (only < 0 || only == 0) print(run<2, 2, 8, false, 0>(sms, ghz, sink));
  if (only < 0 || only == 1) print(run<1, 2, 8, false, 0>(sms, ghz, sink));
  if (only < 0 || only == 2) print(run<3, 2, 8, false, 0>(sms, ghz, sink));
  if (only < 0 || only == 3) print(run<3, 2, 8, false, 160>(sms, ghz, sink));
  if (only < 0 || only == 4) print(run<4, 1, 8, false, 112>(sms, ghz, sink));
  if (only < 0 || only == 5) print(run<4, 2, 8, false, 112>(sms, ghz, sink));
  if (only < 0 || only == 6) print(run<2, 2, 16, false, 0>(sms, ghz, sink));
  if (only < 0 || only == 7) print(run<3, 2, 16, false, 160>(sms, ghz, sink));
  if (only < 0 || only == 8) print(run<4, 1, 16, false, 112>(sms, ghz, sink));
  if (only < 0 || only == 9) print(run<2, 2, 8, true, 0>(sms, ghz, sink));
  if (only < 0 || only == 10) print(run<3, 2, 8, true, 160>(sms, ghz, sink));
  if (only < 0 || only == 11) print(run<4, 1, 8, true, 112>(sms, ghz, sink));
  if (only < 0 || only == 12) print(run<2, 2, 16, true, 0>(sms, ghz, sink));
  if (only < 0 || only == 13) print(run<3, 2, 16, true, 160>(sms, ghz, sink));
  if (only < 0 || only == 14) print(run<4, 1, 16, true, 112>(sms, ghz, sink));
  // K-interleaved warpgroups (each stage one pair of tiles, warpgroup g on stages g, g + G, ...).
  if (only < 0 || only == 15) print(run<2, 2, 8, false, 0, true>(sms, ghz, sink));
  if (only < 0 || only == 16) print(run<3, 2, 8, false, 160, true>(sms, ghz, sink));
  if (only < 0 || only == 17) print(run<3, 2, 16, false, 160, true>(sms, ghz, sink));
  if (only < 0 || only == 18) print(run<2, 2, 8, true, 0, true>(sms, ghz, sink));
  if (only < 0 || only == 19) print(run<3, 2, 8, true, 160, true>(sms, ghz, sink));
  if (only < 0 || only == 20) print(run<3, 2, 16, true, 160, true>(sms, ghz, sink));
  // Three warpgroups at the 128 registers the layer's CTA has (no setmaxnreg through nvJitLink), by how many
  // K32 blocks a step issues between waits (kJ: the layer's k32_per_wait, then the others).
  if (only < 0 || only == 21) print(run<3, 2, 16, false, 0>(sms, ghz, sink));
  if (only < 0 || only == 22) print(run<3, 2, 16, false, 0, false, 4>(sms, ghz, sink));
  if (only < 0 || only == 23) print(run<3, 2, 8, true, 0>(sms, ghz, sink));
  if (only < 0 || only == 24) print(run<3, 2, 8, true, 0, false, 4>(sms, ghz, sink));
  if (only < 0 || only == 25) print(run<3, 2, 16, true, 0>(sms, ghz, sink));
  if (only < 0 || only == 26) print(run<3, 2, 16, true, 0, false, 2>(sms, ghz, sink));
  if (only < 0 || only == 27) print(run<3, 2, 8, false, 0, false, 4>(sms, ghz, sink));

  // The step owners (B = 1's unit schedule): GEMM1 paired rows, GEMM2 items, by K32 blocks a wait.
  if (only < 0 || only == 28) print(run_owned<false, 2>(sms, ghz, sink));
  if (only < 0 || only == 29) print(run_owned<true, 2>(sms, ghz, sink));
  if (only < 0 || only == 30) print(run_owned<false, 4>(sms, ghz, sink));
  if (only < 0 || only == 31) print(run_owned<true, 4>(sms, ghz, sink));
  if (only < 0 || only == 32) print(run_owned<false, 1>(sms, ghz, sink));
  if (only < 0 || only == 33) print(run_owned<true, 1>(sms, ghz, sink));
  // GEMM1 on paired split rows in the stream kernels (AtomSm90Fp8::mainloop_paired: B <= 8, and the short
  // segments of --paired-rows on), beside rows 23 (split, N = 8) and 2 (GEMM2, N = 8), the same layout.
  if (only < 0 || only == 34)
    print(run<3, 2, 8, true, 0, false, AtomSm90Fp8<false>::k32_per_wait<8, 2, true>(), true>(sms, ghz, sink));
  // Rows 35-39 ("-tf"): rows 25, 23, 34, 21 and 2 with the promotion of activations staged in one frame per
  // token (kloop's kTokenFrame: acc += part * 2^(s_w - 127), no activation scale, no scale product): how much
  // faster the consumers would eat weights if the dispatch role (GEMM1) or the GEMM1 epilogue (GEMM2) shifted
  // each K32 block's E4M3 codes by its scale's distance to the token's largest. Not the operator's sums.
  if (only < 0 || only == 35) print(run<3, 2, 16, true, 0, false, 1, false, true>(sms, ghz, sink));
  if (only < 0 || only == 36) print(run<3, 2, 8, true, 0, false, 2, false, true>(sms, ghz, sink));
  if (only < 0 || only == 37)
    print(run<3, 2, 8, true, 0, false, AtomSm90Fp8<false>::k32_per_wait<8, 2, true>(), true, true>(sms, ghz, sink));
  if (only < 0 || only == 38) print(run<3, 2, 16, false, 0, false, 2, false, true>(sms, ghz, sink));
  if (only < 0 || only == 39) print(run<3, 2, 8, false, 0, false, 2, false, true>(sms, ghz, sink));

  return 0;
}
