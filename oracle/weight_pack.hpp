#pragma once
// The CPU twin of the weight transform (templates/moe_weight_transform.cuh):
// checkpoint MXFP4 -> step blobs [E][N/128][K/128][2][4352 B]. It packs code
// by code from the layout definition both share (moe_weight_layouts.cuh), so
// a test can hold the GPU transform to it; the decode tests hold the layout
// to each atom's own recipe.

#include <cstdint>
#include <vector>

namespace moejit::oracle {

// rows = N (2I for W1 with `interleave`, H for W2), k = K; `layout` is a
// contract::WeightLayout.
std::vector<std::uint8_t> pack_projection(const std::vector<std::uint8_t>& payload,
                                          const std::vector<std::uint8_t>& scales, int experts, int rows, int k,
                                          bool interleave, int layout);

}  // namespace moejit::oracle
