#include "runtime/weight_packing.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <tuple>

#include "templates/moe_weight_layouts.cuh"

namespace moejit::runtime {

std::vector<std::uint8_t> pack_projection(std::span<const std::uint8_t> payload, std::span<const std::uint8_t> scales,
                                          int experts, const contract::ProjectionShape& shape, int layout) {
  const int rows = shape.rows, k = shape.k;
  if (rows % 128 != 0 || k % 128 != 0 || shape.src_k % 32 != 0 || shape.src_k > k || shape.src_rows > rows)
    throw std::invalid_argument(
        "pack_projection: rows and K must be multiples of 128 (step blobs pair 64-row tiles) holding the checkpoint");
  std::vector<std::uint8_t> out(std::size_t(experts) * (rows / 64) * (k / 128) * contract::kWeightStepBytes, 0);
  for (int e = 0; e < experts; ++e)
    for (int mt = 0; mt < rows / 64; ++mt)
      for (int kb = 0; kb < k / 128; ++kb) {
        std::uint8_t* step = out.data() + contract::weight_step_offset(e, mt, kb, rows, k);
        for (int w = 0; w < contract::kWeightPayloadBytes / 4; ++w) {
          std::uint32_t word = 0;
          for (int slot = 0; slot < 8; ++slot) {
            const contract::CodeSlot c = contract::code_slot(layout, w, slot);
            const int kk = kb * 128 + c.k, row = contract::checkpoint_row(mt * 64 + c.row, shape);
            if (row < 0 || kk >= shape.src_k) continue;  // padding: code 0
            const std::uint8_t byte = payload[(std::size_t(e) * shape.src_rows + row) * (shape.src_k / 2) + kk / 2];
            const std::uint32_t code = (kk % 2 ? byte >> 4 : byte) & 0xF;
            for (int f = 0; f < 4; ++f) word |= ((code >> f) & 1u) << c.bit[f];
          }
          std::memcpy(step + 4 * w, &word, 4);
        }
        for (int r = 0; r < 64; ++r) {
          const int row = contract::checkpoint_row(mt * 64 + r, shape);
          for (int j = 0; j < 4 && row >= 0 && (kb * 4 + j) < shape.src_k / 32; ++j)
            step[contract::kWeightPayloadBytes + 4 * r + j] =
                scales[(std::size_t(e) * shape.src_rows + row) * (shape.src_k / 32) + 4 * kb + j];
        }
      }
  return out;
}

bool has_subnormal_scales(std::span<const std::uint8_t> payload, std::span<const std::uint8_t> scales, int k) {
  for (std::size_t b = 0; b < scales.size(); ++b) {
    if (scales[b] != 0) continue;
    const std::size_t row = b / (k / 32), block = b % (k / 32);
    if (contract::block_has_value(payload.data() + row * (k / 2) + block * 16)) return true;
  }
  return false;
}

std::uint64_t packed_bytes(const codegen::MoeConfig& config, codegen::Projection which) {
  const contract::ProjectionShape s = codegen::projection_shape(config, which);
  return std::uint64_t(config.weight_experts()) * (s.rows / 64) * (s.k / 128) * contract::kWeightStepBytes;
}

PackedWeightsHost pack_weights(const codegen::MoeConfig& config, const codegen::AtomTraits& atom,
                               const CheckpointWeightsHost& w) {
  const int e = config.weight_experts(), h = config.hidden, i = config.intermediate;
  PackedWeightsHost out;
  out.atom = atom.name;
  struct Projection {
    const char* payload_name;
    const char* scales_name;
    const std::uint8_t *payload, *scales;
    std::size_t payload_given, scales_given;
    int rows, k;  // the checkpoint's
    codegen::Projection which;
    std::vector<std::uint8_t>* packed;
  };
  for (const Projection& p :
       {Projection{"w1", "s1", w.w1, w.s1, w.w1_bytes, w.s1_bytes, 2 * i, h, codegen::Projection::w1, &out.w1},
        Projection{"w2", "s2", w.w2, w.s2, w.w2_bytes, w.s2_bytes, h, i, codegen::Projection::w2, &out.w2}}) {
    const std::size_t payload_bytes = std::size_t(e) * p.rows * (p.k / 2);
    const std::size_t scale_bytes = std::size_t(e) * p.rows * (p.k / 32);
    for (auto [name, ptr, given, want, shape] :
         {std::tuple{p.payload_name, p.payload, p.payload_given, payload_bytes, p.k / 2},
          std::tuple{p.scales_name, p.scales, p.scales_given, scale_bytes, p.k / 32}})
      if (!ptr || given != want)
        throw codegen::ConfigError(name, fmt::format("{}: {} bytes are invalid: must be {} ([{}][{}][{}] uint8)", name,
                                                     ptr ? given : 0, want, e, p.rows, shape));
    // Read in place: a checkpoint's projection can be gigabytes.
    const std::span<const std::uint8_t> payload(p.payload, payload_bytes), scales(p.scales, scale_bytes);
    const int top = *std::max_element(scales.begin(), scales.end());
    if (top > atom.max_weight_scale_code)
      throw codegen::ConfigError(
          "weight scales", fmt::format("weight scales: a UE8M0 code of {} was found in {}; the {} atom supports codes "
                                       "[0, {}]{}",
                                       top, p.scales_name, atom.name, atom.max_weight_scale_code,
                                       top == 255 ? " (255 is NaN in UE8M0)" : ""));
    out.top_scale_code = std::max(out.top_scale_code, top);
    out.subnormal_weight_scales = out.subnormal_weight_scales || has_subnormal_scales(payload, scales, p.k);
    *p.packed = pack_projection(payload, scales, e, codegen::projection_shape(config, p.which), atom.weight_layout);
  }
  return out;
}

}  // namespace moejit::runtime
