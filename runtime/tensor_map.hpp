#pragma once
// TensorMaps (TMA descriptors), encoded on the host. The compute role takes
// them by value (128-byte kernel parameters), so a replayed graph never
// fetches a descriptor from global memory.

#include <array>
#include <cstdint>

#include "runtime/driver_api.hpp"

namespace moejit::runtime {

struct alignas(64) TensorMapBlob {
  std::array<std::uint8_t, 128> bytes{};
  friend bool operator==(const TensorMapBlob&, const TensorMapBlob&) = default;
};
static_assert(sizeof(TensorMapBlob) == sizeof(CUtensorMap));

// Packed weight step blobs (templates/moe_contract.cuh) viewed as `rows` rows
// of contract::kWeightMapRowBytes; one box is `box_rows` rows (contract::weight_box_rows: the
// adjacent steps a compute item loads per K128 block).
TensorMapBlob encode_weight_tile_map(CUdeviceptr payload, std::uint64_t rows, std::uint32_t box_rows);

}  // namespace moejit::runtime
