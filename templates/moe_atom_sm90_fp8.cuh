#pragma once
// The fast sm_90a MMA atom: MXFP4 weights become E4M3 in registers by bit
// placement, activations stay E4M3 in shared memory, and one
//   wgmma.mma_async.m64nNk32.f32.e4m3.e4m3 (A from registers, B from SMEM)
// covers exactly one MX K32 block of the 64-row weight tile. Each K32 partial
// sum is scaled into the FP32 accumulator by 2^(s_w - 127) * 2^(s_x - 127):
// the products are exact, the tensor core's sum inside one K32 block keeps
// about 14 bits, and nothing is lost across blocks (docs/numerics.md).
//
// Weight fragment order (moe_weight_layouts.cuh, kLayoutSm90Fp8): in a step
// blob's 4096 payload bytes, consumer warp w, half h and lane (g, t) own the
// 16 bytes at w*1024 + h*512 + lane*16: words {j=2h row g, j=2h row g+8,
// j=2h+1 row g, j=2h+1 row g+8} (rows of the warp's M16 slice). A word holds
// the 8 codes of one row and K32 block j that the lane feeds to wgmma:
// k = 32j + 4t + b in byte b at bits {7: s, 4: e1, 3: e0, 2: m}, and
// k = 32j + 16 + 4t + b in byte b at bits {5: s, 6: e1, 1: e0, 0: m}. Then
//   x & 0x9C9C9C9C                                 -> a0 / a1 (k 4t..4t+3)
//   ((x << 2) & 0x8C8C8C8C) | ((x >> 2) & 0x10101010) -> a2 / a3 (k 16+4t..)
// are E4M3 bytes worth exactly E2M1 * 2^-6 (code 1, 0.5, is the E4M3
// subnormal 2^-7): five integer operations per 8 weights.
//
// Activations: token column n's K128 slice is 128 bytes at n * 128 of a
// 1024-byte aligned tile, its 16-byte chunk c stored at chunk c ^ (n % 8):
// the 128B-swizzled K-major layout wgmma reads with a descriptor.

#include "moe_atom_sm90_fp8_steps.cuh"
#include "moe_pipeline.cuh"
#include "moe_wgmma_sm90.cuh"

namespace moejit {

// kSubnormalScales: whether a weight scale of UE8M0 code 0 is decoded as its
// 2^-127 (weights holding code-0 blocks with nonzero values) or as 0.0, one
// integer operation a scale fewer (ue8m0_byte_value). kFrame: GEMM1's rows
// come in one scale frame per token (the dispatch role's moe_frame_rows), so
// its promotion is acc += (large + small) * 2^(s_w - 127), two operations a
// value instead of three, and the GEMM1 epilogue multiplies each token's frame
// in once (kTokenFrame).
template <bool kSubnormalScales, bool kFrame = false>
struct AtomSm90Fp8 : Sm90Fp8StepMath {
  static constexpr int kPath = contract::kPathSm90Fp8;
  // The E4M3 placement reads as E2M1 * 2^-6: the accumulator is 2^-6 of the sum.
  static constexpr float kAccScale = 64.0f;
  static constexpr bool kBf16Handoff = false;  // the GEMM1 handoff is MXFP8 (the w4a8-mx recipe)
  static constexpr bool kTokenFrame = kFrame;
  // A staged activation scale record holds its four K32 blocks' 2^(code - 127)
  // as FP32, decoded once where it is written (the GEMM1 epilogue's handoff,
  // the activation producer for the caller's words), not in every consumer's loop.
  static constexpr bool kF32ScaleRecords = true;
  __device__ static float scale_value(u32 code) { return ue8m0_byte_value<0>(code); }
  __device__ static void store_scale_record(u32* record, u32 word) {
    store_pow2s(reinterpret_cast<float*>(record), word);
  }
  // GEMM1 runs mainloop_split on the dispatch role's split rows (contract::path_split_rows).

  // The issue cost of a K128 step per phase and token tile class, by which the schedule balances CTAs
  // (moe_schedule.cuh): contract::kSm90Fp8FrameStepCost / kSm90Fp8BlockStepCost, the K-loops' SASS. With the
  // frame's loops on the MX-block table (and GEMM2 at 20 : 26, older than its loop), GLM5.2 B = 256's last CTA
  // finished 2.7% after the median one on the H200 (bench/results/2026-12-07-h200-s95-s98-acceptance.md).
  static constexpr const int (&kStepCost)[2][4] = kFrame ? contract::kSm90Fp8FrameStepCost
                                                         : contract::kSm90Fp8BlockStepCost;

  // Decoded scales (StageRing::kDecoded), by one warp: every scale word of stage s, its weight rows' and its
  // token columns', as the four FP32 values StepScales<N, T, true> reads.
  template <int kTiles, int kTileN, class Ring>
  __device__ static void decode_scales(const Ring& ring, int s, int lane) {
#pragma unroll
    for (int i = 0; i < kTiles * contract::kWeightTileRows / 32; ++i) {
      const int r = lane + 32 * i, tile = r / contract::kWeightTileRows, row = r % contract::kWeightTileRows;
      store_pow2s(ring.w_scales_dec(s, tile, row), ring.w_scales(s, tile)[row]);
    }
#pragma unroll
    for (int n = lane; n < kTileN; n += 32)  // the records are FP32 already (kF32ScaleRecords)
      *reinterpret_cast<float4*>(ring.x_scales_dec(s, n)) = *reinterpret_cast<const float4*>(ring.x_scale_record(s, n));
  }

  // Where the 16-byte chunk c (of 8) of token column n's K128 slice goes (the 128B swizzle).
  __device__ static u32 x_chunk_offset(int n, int c) {
    return u32(n * 128 + ((c ^ (n & 7)) << 4));
  }

  // The K32 blocks a step issues between two waits: two, and one for GEMM1's
  // 2N-column split rows on 16-column tiles, whose partial sums of two blocks
  // would not fit the 128 registers a consumer has beside three warpgroups
  // (contract::compute_threads). With twelve consumer warps, waiting twice a
  // step runs faster than once even where the whole step fits (GEMM2, N = 8:
  // 5.47 against 5.26 TB/s of weights; bench/results/2026-12-03-h200-three-warpgroups.md).
  template <int N, int T, bool kSplit>
  __host__ __device__ static constexpr int k32_per_wait() {
    return kSplit && N * T > 16 ? 1 : 2;
  }

  // Runs `steps` K128 steps of one segment with N token columns on T 64-row
  // tiles of the warpgroup. Per step, in groups of k32_per_wait K32 blocks:
  // the group's T * kJ wgmmas are issued back-to-back, then the warpgroup
  // waits for them and scales the partial sums in; the next step's weights
  // and scale words are read while the last group runs. (ptxas keeps wgmma
  // asynchronous only when no accumulator of an in-flight group is read and
  // no wgmma wait sits on a branch: so the scaling follows a full wait, and
  // the other consumer warpgroups' MMAs fill that gap.)
  template <int N, int T, class Ring, class Cursor>
  __device__ static void mainloop(float (&acc)[T][N / 2], const Ring& ring, Cursor& cur, int steps) {
    kloop<N, T, false>(acc, ring, cur, steps);
  }
  // mainloop for GEMM1 on split rows (contract::path_split_rows): each K32
  // block is one wgmma of 2N columns on the weight fragment, the segment's
  // large rows then its small rows (staged N rows apart:
  // contract::x_stage_bytes), so the two partial sums of a column stay
  // separate until they are added in FP32 before the scale.
  template <int N, int T, class Ring, class Cursor>
  __device__ static void mainloop_split(float (&acc)[T][N / 2], const Ring& ring, Cursor& cur, int steps) {
    kloop<N, T, true, k32_per_wait<N, T, true>(), false, kFrame>(acc, ring, cur, steps);
  }
  // mainloop_split on paired rows (contract::kPairedRows: token r's large row at column 2r, its small row at
  // 2r + 1): one wgmma of 8 columns a K32 block; the sums come back in the 8-column layout.
  template <int T, class Ring, class Cursor>
  __device__ static void mainloop_paired(float (&acc)[T][4], const Ring& ring, Cursor& cur, int steps) {
    kloop<8, T, true, k32_per_wait<8, T, true>(), true, kFrame>(acc, ring, cur, steps);
  }
  // mainloop over `steps` one-step items (the unit schedule's GEMM2: each 64-row tile needs one K128 block):
  // after each step, item_done(step, acc) takes its sums and leaves acc zeroed. One loop, so the next step's
  // operands load while an item's sums are stored (a segment per item paid the loop's start and end each time:
  // 1.05 us a step against 0.63 for GEMM1's, on the H200).
  template <int N, int T, class Ring, class Cursor, class ItemDone>
  __device__ static void mainloop_items(float (&acc)[T][N / 2], const Ring& ring, Cursor& cur, int steps,
                                        ItemDone item_done) {
    kloop<N, T, false, k32_per_wait<N, T, false>()>(acc, ring, cur, steps, item_done);
  }

  // The step owners' loops (contract::step_owners): warpgroup `owner` of three runs steps k = owner (mod 3),
  // each as two passes over T tiles (tiles 0..T-1 into acc[0], T..2T-1 into acc[1]). GEMM1 runs on paired split
  // rows (contract::kPairedRows: token r's large row at column 2r, its small row at 2r + 1), one wgmma of 8
  // columns a K32 block, and its sums come back in the 8-column layout; GEMM2 on the unit schedule's items.
  template <int T, class Ring, class Cursor>
  __device__ static void mainloop_paired_owned(float (&acc)[2][T][4], const Ring& ring, Cursor& cur, int steps,
                                               int owner) {
    kloop_owned<8, T, true>(acc, ring, cur, steps, owner);
  }
  template <int N, int T, class Ring, class Cursor, class ItemDone>
  __device__ static void mainloop_items_owned(float (&acc)[2][T][N / 2], const Ring& ring, Cursor& cur, int steps,
                                              int owner, ItemDone item_done) {
    kloop_owned<N, T, false>(acc, ring, cur, steps, owner, item_done);
  }

  // The loop of mainloop, mainloop_split, mainloop_paired and mainloop_items, kJ K32 blocks a wait (k32_per_wait;
  // another kJ for bench/kloop_probe.cu).
  struct NoStepEnd {
    template <class Acc>
    __device__ void operator()(int, Acc&) const {}
  };
  // The scales a K32 partial sum is promoted with: the weight's alone where the activations are in the token frame.
  template <bool kWeightOnly, class Scales>
  __device__ static auto promotion_scales(const Scales& now) {
    if constexpr (kWeightOnly)
      return WeightScalesOnly<Scales>{now};
    else
      return now;
  }
  // kTokenFrame: the promotion without the activation scale, acc += part * 2^(s_w - 127), for GEMM1's rows in
  // one frame per token (kFrame; bench/kloop_probe.cu also runs GEMM2's loops so, whose sums are then not the
  // operator's).
  template <int N, int T, bool kSplit, int kJ = k32_per_wait<N, T, kSplit>(), bool kPaired = false,
            bool kTokenFrame = false, class Ring, class Cursor, class StepEnd = NoStepEnd>
  __device__ static void kloop(float (&acc)[T][N / 2], const Ring& ring, Cursor& cur, int steps,
                               StepEnd step_end = {}) {
    static_assert(kJ == 1 || kJ == 2 || kJ == 4, "a step's four K32 blocks in equal groups");
    static_assert(!kPaired || (kSplit && N == 8), "paired rows are split rows of 8-column tiles");
    constexpr int kW = kPaired ? 8 : kSplit ? 2 * N : N;  // the wgmma's width
    steps = warp_uniform(steps);
    float part[T][kJ][kW / 2];
    StepOperands<N, T, Ring::kDecoded, kSubnormalScales> op;
    zero(part);
    // The descriptors of stage s differ from stage 0's in the start address only.
    const u32 desc0 = sw128_desc_lo(smem_addr(ring.x_tile(0)));
    int s = next_stage(ring, cur, true, 0);
    op.load(ring, s);
    for (int k = 0; k < steps; ++k) {
      u32 a[T][4][4];
      expand(op.words, a);
      // cp.async wrote the activation tile through the generic proxy; wgmma reads it through the async proxy.
      fence_proxy_async_shared();
#pragma unroll
      for (int u = 0; u < T; ++u) fence_operands(a[u]);
      const u32 desc = desc0 + u32(s * (Ring::kXStageBytes >> 4));
      StepScales<N, T, Ring::kDecoded, kSubnormalScales> now;  // decoded: read after the MMAs' wait (StepOperands)
      if constexpr (!Ring::kDecoded) now = op.scales;
      const int s_now = s;
      // Wide tiles read the next step after the last wait instead: its words would not fit beside the partial sums.
      constexpr bool kPrefetch = N * T <= 16;
#pragma unroll
      for (int h = 0; h < 4 / kJ; ++h) {
        wgmma_fence();
#pragma unroll
        for (int u = 0; u < T; ++u)
#pragma unroll
          for (int j = 0; j < kJ; ++j) Wgmma<kW>::issue(part[u][j], a[u][h * kJ + j], desc + 2 * (h * kJ + j));
        wgmma_commit();
        const bool last = h == 4 / kJ - 1;
        // Only the wait is conditional: registers that feed a wgmma must not be written on a branch.
        if (last) s = next_stage(ring, cur, k + 1 < steps, s_now);
        if (kPrefetch && last) op.load(ring, s);
        wgmma_wait<0>();
#pragma unroll
        for (int u = 0; u < T; ++u)
#pragma unroll
          for (int j = 0; j < kJ; ++j) fence_operands(part[u][j]);
        if constexpr (Ring::kDecoded)
          if (h == 0) now.load(ring, s_now);  // the stage is held until its release below
        if (last) {
          if (!kPrefetch) op.load(ring, s);  // before the release: on the last step s is s_now
          release_stage(ring, s_now);
        }
        scale_group<N, T, kSplit, kJ, kPaired>(acc, part, promotion_scales<kTokenFrame>(now), h);
      }
      step_end(k, acc);
    }
    if constexpr (kPaired) unpair(acc);
  }

  // kloop for a step owner: its steps as kloop's, each pass over T tiles, the second pass's operands read while
  // the first's last MMAs run and the next own step's while the second's do. The other owners' stages are
  // waited for and released unread (as pass_stages: every consumer thread arrives on every stage, so no thread can
  // wait on a phase its stage has already left). An owner waits for step k + 3 before it frees step k, so the
  // ring needs 4 stages (contract::compute_smem_valid).
  // kPaired: GEMM1's split rows, paired (the owners' GEMM1 always is); else GEMM2's items.
  // kJ: K32 blocks a wait (another for bench/kloop_probe.cu).
  template <int N, int T, bool kPaired, int kJ = k32_per_wait<N, T, false>(), class Ring, class Cursor,
            class StepEnd = NoStepEnd>
  __device__ static void kloop_owned(float (&acc)[2][T][N / 2], const Ring& ring, Cursor& cur, int steps, int owner,
                                     StepEnd step_end = {}) {
    static_assert(!Ring::kDecoded, "step owners decode their UE8M0 scale words (no decoder warp)");
    static_assert(N == 8, "step owners run 8-column token tiles");
    using Operands = StepOperands<N, T, false, kSubnormalScales>;
    constexpr int kOwners = 3, kW = 8;
    steps = warp_uniform(steps);
    owner = warp_uniform(owner);
    int k = 0;  // the steps the cursor has moved past
    auto pass_until = [&](int until) {
      for (; k < until; ++k) {
        wait_full(ring, cur.stage, cur.phase);
        release_stage(ring, cur.stage);
        cur.advance();
      }
    };
    if (owner >= steps) return pass_until(steps);  // acc stays as given
    pass_until(owner);
    float part[T][kJ][kW / 2];
    zero(part);
    Operands op;
    const u32 desc0 = sw128_desc_lo(smem_addr(ring.x_tile(0)));
    int s = next_stage(ring, cur, true, 0);
    ++k;
    op.load_words(ring, s, 0);
    for (int ko = owner; ko < steps; ko += kOwners) {
      const bool more = ko + kOwners < steps;
      fence_proxy_async_shared();  // the activation tile came through the generic proxy (kloop)
      const u32 desc = desc0 + u32(s * (Ring::kXStageBytes >> 4));
      const int s_now = s;
#pragma unroll
      for (int pass = 0; pass < 2; ++pass) {
        // Registers: the scales are read per pass, not ahead with the words, and each group's words are
        // expanded just before its MMAs, so two passes' sums fit the 128 registers of three warpgroups.
        StepScales<N, T, false, kSubnormalScales> now;
        Operands::load_scales(ring, s_now, pass * T, now);
#pragma unroll
        for (int h = 0; h < 4 / kJ; ++h) {
          u32 a[T][kJ][4];
          expand_group<T, kJ>(op.words, a, h);
#pragma unroll
          for (int u = 0; u < T; ++u)
#pragma unroll
            for (int j = 0; j < kJ; ++j) fence_operands(a[u][j]);
          wgmma_fence();
#pragma unroll
          for (int u = 0; u < T; ++u)
#pragma unroll
            for (int j = 0; j < kJ; ++j) Wgmma<kW>::issue(part[u][j], a[u][j], desc + 2 * (h * kJ + j));
          wgmma_commit();
          const bool last = h == 4 / kJ - 1;
          // The next words, while the last group runs: this step's second pass, or the next own step's first.
          if (last && pass == 1) {
            pass_until(more ? ko + kOwners : steps);
            s = next_stage(ring, cur, more, s_now);
            k += more;
          }
          if (last) op.load_words(ring, pass == 0 ? s_now : s, pass == 0 ? T : 0);
          wgmma_wait<0>();
#pragma unroll
          for (int u = 0; u < T; ++u)
#pragma unroll
            for (int j = 0; j < kJ; ++j) fence_operands(part[u][j]);
          if (last && pass == 1) release_stage(ring, s_now);
          // GEMM1's paired rows are split rows, in the token frame where it is planned; GEMM2's items are neither.
          scale_group<N, T, kPaired, kJ, kPaired>(acc[pass], part, promotion_scales<(kFrame && kPaired)>(now), h);
        }
      }
      step_end(ko, acc);
    }
    if constexpr (kPaired) unpair(acc[0]), unpair(acc[1]);
  }
};

}  // namespace moejit
