#include "oracle/weight_pack.hpp"

#include <cstring>
#include <stdexcept>

#include "templates/moe_weight_layouts.cuh"

namespace moejit::oracle {

std::vector<std::uint8_t> pack_projection(const std::vector<std::uint8_t>& payload,
                                          const std::vector<std::uint8_t>& scales, int experts, int rows, int k,
                                          bool interleave, int layout) {
  if (rows % 128 != 0 || k % 128 != 0)
    throw std::invalid_argument("pack_projection: rows and K must be multiples of 128 (step blobs pair 64-row tiles)");
  std::vector<std::uint8_t> out(std::size_t(experts) * (rows / 64) * (k / 128) * contract::kWeightStepBytes, 0);
  auto source_row = [&](int n) { return interleave ? contract::interleaved_checkpoint_row(n, rows) : n; };
  for (int e = 0; e < experts; ++e)
    for (int mt = 0; mt < rows / 64; ++mt)
      for (int kb = 0; kb < k / 128; ++kb) {
        std::uint8_t* step = out.data() + contract::weight_step_offset(e, mt, kb, rows, k);
        for (int w = 0; w < contract::kWeightPayloadBytes / 4; ++w) {
          std::uint32_t word = 0;
          for (int slot = 0; slot < 8; ++slot) {
            const contract::CodeSlot c = contract::code_slot(layout, w, slot);
            const int kk = kb * 128 + c.k;
            const std::uint8_t byte = payload[(std::size_t(e) * rows + source_row(mt * 64 + c.row)) * (k / 2) + kk / 2];
            const std::uint32_t code = (kk % 2 ? byte >> 4 : byte) & 0xF;
            for (int f = 0; f < 4; ++f) word |= ((code >> f) & 1u) << c.bit[f];
          }
          std::memcpy(step + 4 * w, &word, 4);
        }
        for (int r = 0; r < 64; ++r) {
          const std::uint8_t* s = scales.data() + (std::size_t(e) * rows + source_row(mt * 64 + r)) * (k / 32) + 4 * kb;
          std::memcpy(step + contract::kWeightPayloadBytes + 4 * r, s, 4);
        }
      }
  return out;
}

}  // namespace moejit::oracle
