#pragma once
// Weight transform: checkpoint MXFP4 (rows [E][src_rows][src_k/2] bytes, low
// nibble first; scales [E][src_rows][src_k/32] bytes) -> step blobs
// [E][rows/64][k/128] of contract::kWeightStepBytes: the 4096 payload bytes in
// the atom's fragment order (moe_weight_layouts.cuh) and the 64 rows' scale
// words (byte j = K32 block j). Packed row n holds checkpoint row
// contract::checkpoint_row(n, shape); padding rows and columns (H and I are
// padded: codegen::projection_shape) get code 0 and scale code 0.
//
// `status[0]` gets the largest scale code seen, so the host can refuse codes
// the path does not support, naming the code; `status[1]` is set when a K32
// block of scale code 0 holds a nonzero value (its scale is the FP32
// subnormal 2^-127: codegen::MoeCodegenOptions::subnormal_weight_scales).

#include "moe_weight_layouts.cuh"
#include "mx_types.cuh"

namespace moejit {

// One thread per 32-bit word of the packed output.
template <int kExperts, int kRows, int kK, int kSrcRows, int kSrcK, int kW1, int kGateUpInterleaved, int kLayout>
__device__ void moe_weight_transform(const u8* __restrict__ payload_in, const u8* __restrict__ scales_in,
                                     u32* __restrict__ packed, int* status) {
  constexpr int kBlocks = kK / 128, kTiles = kRows / 64;
  static_assert(kTiles % 2 == 0, "step blobs pair 64-row tiles: N must be a multiple of 128");
  static_assert(kSrcK % 32 == 0 && kSrcK <= kK && kSrcRows <= kRows, "the checkpoint fits the padded projection");
  constexpr contract::ProjectionShape kShape{kRows, kK, kSrcRows, kSrcK, kW1 != 0, kGateUpInterleaved != 0};
  constexpr int kStepWords = contract::kWeightStepBytes / 4, kPayloadWords = contract::kWeightPayloadBytes / 4;
  const u64 words = u64(kExperts) * kTiles * kBlocks * kStepWords;
  for (u64 idx = u64(blockIdx.x) * blockDim.x + threadIdx.x; idx < words; idx += u64(gridDim.x) * blockDim.x) {
    // Output order is memory order (contract::weight_step_offset): step index, then the step's words.
    const int word = int(idx % kStepWords);
    const contract::WeightStep st = contract::weight_step_at((long long)(idx / kStepWords), kRows, kK);
    const int e = st.expert, mt = st.mt, kb = st.kb;
    u32 out = 0;
    if (word < kPayloadWords) {
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        const contract::CodeSlot c = contract::code_slot(kLayout, word, i);
        const int kk = kb * 128 + c.k, row = contract::checkpoint_row(mt * 64 + c.row, kShape);
        if (row < 0 || kk >= kSrcK) continue;
        const u8 byte = payload_in[(u64(e) * kSrcRows + row) * (kSrcK / 2) + kk / 2];
        const u32 code = (kk % 2 ? byte >> 4 : byte) & 0xFu;
#pragma unroll
        for (int f = 0; f < 4; ++f) out |= ((code >> f) & 1u) << c.bit[f];
      }
    } else {
      const int row = contract::checkpoint_row(mt * 64 + word - kPayloadWords, kShape);
      if (row >= 0) {
        const u8* s = scales_in + (u64(e) * kSrcRows + row) * (kSrcK / 32);
        int top = 0;
        bool subnormal = false;
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          const int block = kb * 4 + j;
          const u32 code = block < kSrcK / 32 ? s[block] : 0u;
          out |= code << (8 * j);
          top = max(top, int(code));
          if (code == 0 && block < kSrcK / 32)
            subnormal |= contract::block_has_value(payload_in + (u64(e) * kSrcRows + row) * (kSrcK / 2) + block * 16);
        }
        if (top > 0) atomicMax(status, top);
        if (subnormal) atomicOr(status + 1, 1);
      }
    }
    packed[idx] = out;
  }
}

}  // namespace moejit
