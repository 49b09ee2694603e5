#pragma once
// The CPU twin of the weight transform (templates/moe_weight_transform.cuh):
// checkpoint MXFP4 -> the packed tile form. Written element by element from
// the layout definition, so a test can hold the GPU transform to it.

#include <cstdint>
#include <vector>

namespace moejit::runtime {

struct PackedProjection {
  std::vector<std::uint32_t> payload;  // [E][K/128][N][16] words (64 bytes per row and K128 block)
  std::vector<std::uint32_t> scales;   // [E][K/128][N] words, byte j = K32 block j
};

// How the 8 codes of a fragment word are arranged: the sm_90a bit scatter
// (moe_atom_sm90.cuh) or the sm_120a nibble order (moe_atom_sm120.cuh).
enum class FragmentOrder { sm90_bit_scatter, sm120_nibbles };

// rows = N (2I for W1 with `interleave`, H for W2), k = K.
PackedProjection pack_projection(const std::vector<std::uint8_t>& payload, const std::vector<std::uint8_t>& scales,
                                 int experts, int rows, int k, bool interleave,
                                 FragmentOrder order = FragmentOrder::sm90_bit_scatter);

}  // namespace moejit::runtime
