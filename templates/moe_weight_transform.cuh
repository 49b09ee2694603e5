#pragma once
// Weight transform: checkpoint MXFP4 (rows [E][N][K/2] bytes, low nibble
// first; scales [E][N][K/32] bytes) -> step blobs [E][N/64][K/128] of
// contract::kWeightStepBytes: the 4096 payload bytes in the atom's fragment
// order (moe_weight_layouts.cuh) and the 64 rows' scale words (byte j = K32
// block j). With kInterleave (W1), packed row n holds checkpoint row
// interleaved_checkpoint_row(n).
//
// `status[0]` gets the largest scale code seen, so the host can refuse codes
// the path does not support, naming the code.

#include "moe_weight_layouts.cuh"
#include "mx_types.cuh"

namespace moejit {

// One thread per 32-bit word of the packed output.
template <int kExperts, int kRows, int kK, int kInterleave, int kLayout>
__device__ void moe_weight_transform(const u8* __restrict__ payload_in, const u8* __restrict__ scales_in,
                                     u32* __restrict__ packed, int* status) {
  constexpr int kBlocks = kK / 128, kTiles = kRows / 64;
  static_assert(kTiles % 2 == 0, "step blobs pair 64-row tiles: N must be a multiple of 128");
  constexpr int kStepWords = contract::kWeightStepBytes / 4, kPayloadWords = contract::kWeightPayloadBytes / 4;
  const u64 words = u64(kExperts) * kTiles * kBlocks * kStepWords;
  for (u64 idx = u64(blockIdx.x) * blockDim.x + threadIdx.x; idx < words; idx += u64(gridDim.x) * blockDim.x) {
    // Output order is memory order (contract::weight_step_offset): step index, then the step's words.
    const int word = int(idx % kStepWords);
    const contract::WeightStep st = contract::weight_step_at((long long)(idx / kStepWords), kRows, kK);
    const int e = st.expert, mt = st.mt, kb = st.kb;
    auto source_row = [&](int tile_row) {
      const int n = mt * 64 + tile_row;
      return kInterleave ? contract::interleaved_checkpoint_row(n, kRows) : n;
    };
    u32 out = 0;
    if (word < kPayloadWords) {
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        const contract::CodeSlot c = contract::code_slot(kLayout, word, i);
        const int kk = kb * 128 + c.k;
        const u8 byte = payload_in[(u64(e) * kRows + source_row(c.row)) * (kK / 2) + kk / 2];
        const u32 code = (kk % 2 ? byte >> 4 : byte) & 0xFu;
#pragma unroll
        for (int f = 0; f < 4; ++f) out |= ((code >> f) & 1u) << c.bit[f];
      }
    } else {
      const u8* s = scales_in + (u64(e) * kRows + source_row(word - kPayloadWords)) * (kK / 32) + kb * 4;
      out = u32(s[0]) | (u32(s[1]) << 8) | (u32(s[2]) << 16) | (u32(s[3]) << 24);
      const int top = max(max(int(s[0]), int(s[1])), max(int(s[2]), int(s[3])));
      if (top > 0) atomicMax(status, top);
    }
    packed[idx] = out;
  }
}

}  // namespace moejit
