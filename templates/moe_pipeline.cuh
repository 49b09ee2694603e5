#pragma once
// The compute role's stage ring: the views of one stage's buffers and the
// barrier sets. Producers fill stage s (weights on full_w[s], staged
// activations, scale words and route ids on full_x[s]); the consumer
// warpgroup waits on both (with decoded scales, on decoded[s], which the
// decoder warp arrives on after both and its FP32 scales) and, when its MMA
// atom is done reading, releases the stage on empty[s] (one arrival per
// consumer thread: contract::stage_release_arrivals). Every role walks the
// same step sequence, so each keeps its own (stage, phase) cursor.

#include "moe_contract.cuh"
#include "moe_ptx.cuh"

namespace moejit {

// kDecoded: a decoder warp turns each stage's scale words into FP32 (wdec, xdec) and then arrives on
// decoded[s]; the consumers wait on that alone (the decoder waited on both full barriers first).
template <int kPath, int kTiles, int kTileN, int kStages, bool kDecodedScales = false>
struct StageRing {
  static constexpr int kXStageBytes = contract::x_stage_bytes(kPath, kTileN);
  static constexpr int kWBytes = kTiles * contract::kWeightStepBytes;
  static constexpr bool kDecoded = kDecodedScales;
  u8* x;       // [kStages][kXStageBytes]: each stage's X tile
  u8* w;       // [kStages][kTiles][kWeightStepBytes]
  u32* xs;     // [kStages][kTileN] scale records (contract::kScaleRecordBytes)
  int* route;  // [kStages][kTileN]
  u64* full_w;
  u64* full_x;
  u64* empty;
  u64* decoded = nullptr;  // [kStages] (kDecoded)
  float* wdec = nullptr;   // [kStages][kTiles][64][4] (kDecoded)
  float* xdec = nullptr;   // [kStages][kTileN][4] (kDecoded)

  __device__ u8* x_tile(int s) const { return x + s * kXStageBytes; }
  // GEMM1's small rows of a segment of n token columns (contract::path_split_rows, contract::x_stage_bytes).
  __device__ u8* x_small_tile(int s, int n) const { return x_tile(s) + n * contract::x_row_pitch(kPath); }
  // The weight step of 64-row tile `tile` of the item in stage s.
  __device__ const u8* w_step(int s, int tile) const { return w + s * kWBytes + tile * contract::kWeightStepBytes; }
  __device__ const u32* w_scales(int s, int tile) const {
    return reinterpret_cast<const u32*>(w_step(s, tile) + contract::kWeightPayloadBytes);
  }
  // The scale word of token column n of stage s.
  __device__ u32 x_scale(int s, int n) const { return xs[(s * kTileN + n) * (contract::kScaleRecordBytes / 4)]; }
  __device__ u32* x_scale_record(int s, int n) const {
    return xs + (s * kTileN + n) * (contract::kScaleRecordBytes / 4);
  }
  __device__ const int* routes(int s) const { return route + s * kTileN; }
  // kDecoded: the four K32 blocks' scales of row `row` of tile `tile`, and of token column n, in stage s.
  __device__ float* w_scales_dec(int s, int tile, int row) const {
    return wdec + ((s * kTiles + tile) * contract::kWeightTileRows + row) * 4;
  }
  __device__ float* x_scales_dec(int s, int n) const { return xdec + (s * kTileN + n) * 4; }
};

// A role's position in the ring.
template <int kStages>
struct StageCursor {
  int stage = 0;
  u32 phase = 0;
  __device__ void advance() {
    if (++stage == kStages) stage = 0, phase ^= 1u;
  }
};

// Consumer side: wait until stage s holds both operands.
template <class Ring>
__device__ __forceinline__ void wait_full(const Ring& ring, int s, u32 phase) {
  if constexpr (Ring::kDecoded) {
    mbar_wait(&ring.decoded[s], phase);  // ordered after both full barriers by the decoder's own waits
  } else {
    mbar_wait(&ring.full_w[s], phase);
    mbar_wait(&ring.full_x[s], phase);
  }
}
// Consumer side: this thread is done with stage s. Every thread arrives after its own reads (and its wgmma
// waits). One lane arriving for its warp after __syncwarp is as correct (bar.warp.sync orders the lanes' reads
// before it), but racecheck does not follow that order and drew hazards on every stage
// (bench/racecheck/mbarrier_handoff.cu). The __syncwarp orders nothing the arrivals need; it is here because
// without it ptxas spilled 4 bytes at DSV4.1-Flash B = 128 / 256 (one value kept across a segment's setup,
// bench/results/2026-12-06-h100-s85-s88-racecheck.md), with it none: an allocation choice a ptxas update may
// change, which CI's plan == launch sweep (no spill at any planned shape) would catch. Racecheck lists nothing
// with it, and the H100 bench is level (bench/results/2026-12-07-h100-s89-s93-every-thread-release.md).
// Called by the whole warp, converged (the __syncwarp's full mask).
template <class Ring>
__device__ __forceinline__ void release_stage(const Ring& ring, int s) {
  __syncwarp();
  mbar_arrive(&ring.empty[s]);
}

// Consumer side, a warpgroup with no tiles in the item (a token tile's last,
// shorter item): its warps wait for each of the next `steps` stages and
// release it, so the ring's phases stay the same for every role. (Releasing
// without the wait could count an arrival toward a stage's previous phase.)
template <class Ring, class Cursor>
__device__ void pass_stages(const Ring& ring, Cursor& cur, int steps) {
  for (int k = 0; k < steps; ++k) {
    wait_full(ring, cur.stage, cur.phase);
    release_stage(ring, cur.stage);
    cur.advance();
  }
}

}  // namespace moejit
