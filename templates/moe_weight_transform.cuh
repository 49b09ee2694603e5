#pragma once
// Weight transform: checkpoint MXFP4 (rows [E][N][K/2] bytes, low nibble
// first; scales [E][N][K/32] bytes) -> the packed tile form the compute role
// streams: payload [E][K/128][N][64] bytes in fragment order (see
// moe_atom_sm90.cuh), scales MN-major [E][K/128][N] int32 (byte j = K32 block j).
// With kInterleave, each 64-row tile holds 32 gate rows and the matching 32
// up rows (rows r < 8 of each 16-row slice are gate, r >= 8 up), so SwiGLU and
// the requantization block never leave the CTA.

#include "mx_types.cuh"

namespace moejit {

// Checkpoint row of packed row n (the gate/up interleave when kInterleave).
template <int kRows, int kInterleave>
__device__ __forceinline__ int checkpoint_row(int n) {
  if (!kInterleave) return n;
  const int tile = n / 64, slice = (n % 64) / 16, r = n % 16;
  const int i = tile * 32 + slice * 8 + (r % 8);
  return r < 8 ? i : kRows / 2 + i;
}

// Bit position of field f (m, e0, e1, s) of the low / high element of pair p
// in a fragment word (the table in moe_atom_sm90.cuh).
__device__ __forceinline__ int fragment_bit(int pair, int high, int field) {
  constexpr unsigned char kBits[4][2][4] = {{{6, 7, 8, 15}, {22, 23, 24, 31}},
                                            {{10, 11, 12, 19}, {26, 27, 28, 3}},
                                            {{16, 17, 18, 25}, {0, 1, 2, 9}},
                                            {{20, 13, 14, 21}, {4, 29, 30, 5}}};
  return kBits[pair][high][field];
}

__device__ __forceinline__ u32 scatter_e2m1(u32 code, int pair, int high) {
  u32 out = 0;
#pragma unroll
  for (int f = 0; f < 4; ++f) out |= ((code >> f) & 1u) << fragment_bit(pair, high, f);
  return out;
}

// One thread per packed 32-bit word. kNibbleOrder selects the sm_120a
// fragment order (moe_atom_sm120.cuh) over the sm_90a bit scatter. `status[0]` gets 1 if a scale exceeds the
// sm_90a dequantization range (UE8M0 code > 128, i.e. |w| >= 16).
template <int kExperts, int kRows, int kK, int kInterleave, int kNibbleOrder>
__device__ void moe_weight_transform(const u8* __restrict__ payload_in, const u8* __restrict__ scales_in,
                                     u32* __restrict__ payload_out, u32* __restrict__ scales_out, int* status) {
  constexpr int kBlocks = kK / 128;
  const u64 words = u64(kExperts) * kBlocks * kRows * 16;
  for (u64 idx = u64(blockIdx.x) * blockDim.x + threadIdx.x; idx < words; idx += u64(gridDim.x) * blockDim.x) {
    const int word = int(idx % 16);  // segment t = word / 4, K32 block j = word % 4
    const int n = int((idx / 16) % kRows);
    const int kb = int((idx / (16ull * kRows)) % kBlocks);
    const int e = int(idx / (16ull * kRows * kBlocks));
    const int t = word / 4, j = word % 4;
    const u8* src = payload_in + (u64(e) * kRows + checkpoint_row<kRows, kInterleave>(n)) * (kK / 2);
    const int pair_k[4] = {32 * j + 2 * t, 32 * j + 2 * t + 8, 32 * j + 16 + 2 * t, 32 * j + 24 + 2 * t};
    u32 out = 0;
    if (kNibbleOrder) {
      // sm_120a: nibbles 0..3 = k 32j + 4t + {0..3}, nibbles 4..7 = k 32j + 16 + 4t + {0..3}.
      const u32 lo = *reinterpret_cast<const unsigned short*>(src + (kb * 128 + 32 * j + 4 * t) / 2);
      const u32 hi = *reinterpret_cast<const unsigned short*>(src + (kb * 128 + 32 * j + 16 + 4 * t) / 2);
      out = lo | (hi << 16);
    } else {
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const u32 byte = src[(kb * 128 + pair_k[i]) / 2];  // elements k (low nibble) and k+1 (high)
        out |= scatter_e2m1(byte & 0xFu, i, 0);
        out |= scatter_e2m1(byte >> 4, i, 1);
      }
    }
    payload_out[idx] = out;
    if (word == 0) {
      const u8* s = scales_in + (u64(e) * kRows + checkpoint_row<kRows, kInterleave>(n)) * (kK / 32) + kb * 4;
      scales_out[(u64(e) * kBlocks + kb) * kRows + n] =
          u32(s[0]) | (u32(s[1]) << 8) | (u32(s[2]) << 16) | (u32(s[3]) << 24);
      if (s[0] > 128 || s[1] > 128 || s[2] > 128 || s[3] > 128) status[0] = 1;
    }
  }
}

}  // namespace moejit
