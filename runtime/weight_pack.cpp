#include "runtime/weight_pack.hpp"

namespace moejit::runtime {
namespace {
// Where bit f (m, e0, e1, s) of the low (h=0) / high (h=1) element of pair p
// lives in a fragment word: the layout of templates/moe_atom_sm90.cuh.
constexpr int k_fragment_bit[4][2][4] = {{{6, 7, 8, 15}, {22, 23, 24, 31}},
                                         {{10, 11, 12, 19}, {26, 27, 28, 3}},
                                         {{16, 17, 18, 25}, {0, 1, 2, 9}},
                                         {{20, 13, 14, 21}, {4, 29, 30, 5}}};
}  // namespace

PackedProjection pack_projection(const std::vector<std::uint8_t>& payload, const std::vector<std::uint8_t>& scales,
                                 int experts, int rows, int k, bool interleave, FragmentOrder order) {
  PackedProjection out;
  const int blocks = k / 128;
  out.payload.assign(std::size_t(experts) * blocks * rows * 16, 0);
  out.scales.assign(std::size_t(experts) * blocks * rows, 0);
  for (int e = 0; e < experts; ++e) {
    for (int src_row = 0; src_row < rows; ++src_row) {
      // Packed row of checkpoint row `src_row`: gate i and up i share a 16-row
      // slice, gate in its first 8 rows, up in its last 8.
      int n = src_row;
      if (interleave) {
        const bool up = src_row >= rows / 2;
        const int i = up ? src_row - rows / 2 : src_row;
        n = (i / 32) * 64 + ((i % 32) / 8) * 16 + (up ? 8 : 0) + i % 8;
      }
      const std::uint8_t* row = payload.data() + (std::size_t(e) * rows + src_row) * (k / 2);
      for (int kk = 0; kk < k; ++kk) {
        const std::uint32_t code = (row[kk / 2] >> (4 * (kk % 2))) & 0xF;
        const int kb = kk / 128, c = kk % 128;  // column within the K128 block
        const int j = c / 32, in_block = c % 32;
        const int chunk16 = in_block / 16, within = in_block % 16;
        const int t = (within % 8) / 2, high_col = within / 8, elem = within % 2;
        const int pair = 2 * chunk16 + high_col;  // 0: 2t, 1: 2t+8, 2: 16+2t, 3: 24+2t
        if (order == FragmentOrder::sm120_nibbles) {
          // Word (t, j) holds k = 32j + 4t + {0..3} in nibbles 0..3 and k = 32j + 16 + 4t + {0..3} in 4..7.
          const int t4 = (in_block % 16) / 4, nib = (in_block % 4) + 4 * (in_block / 16);
          out.payload[((std::size_t(e) * blocks + kb) * rows + n) * 16 + 4 * t4 + j] |= code << (4 * nib);
          continue;
        }
        const std::size_t word = ((std::size_t(e) * blocks + kb) * rows + n) * 16 + 4 * t + j;
        for (int f = 0; f < 4; ++f) out.payload[word] |= ((code >> f) & 1u) << k_fragment_bit[pair][elem][f];
      }
      for (int kb = 0; kb < blocks; ++kb)
        for (int j = 0; j < 4; ++j)
          out.scales[(std::size_t(e) * blocks + kb) * rows + n] |=
              std::uint32_t(scales[(std::size_t(e) * rows + src_row) * (k / 32) + 4 * kb + j]) << (8 * j);
    }
  }
  return out;
}

}  // namespace moejit::runtime
