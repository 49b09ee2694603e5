#include "runtime/tensor_map.hpp"

#include <cstring>

#include "templates/moe_contract.cuh"

namespace moejit::runtime {

TensorMapBlob encode_weight_tile_map(CUdeviceptr payload, std::uint64_t rows, std::uint32_t box_rows) {
  CUtensorMap map{};
  constexpr cuuint32_t kRow = contract::kWeightMapRowBytes;
  const cuuint64_t dims[2] = {kRow, rows};
  const cuuint64_t strides[1] = {kRow};  // bytes between rows
  const cuuint32_t box[2] = {kRow, box_rows};
  const cuuint32_t element_strides[2] = {1, 1};
  MOEJIT_CU(cuTensorMapEncodeTiled, &map, CU_TENSOR_MAP_DATA_TYPE_UINT8, 2, reinterpret_cast<void*>(payload), dims,
            strides, box, element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
            CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  TensorMapBlob blob;
  std::memcpy(blob.bytes.data(), &map, sizeof(map));
  return blob;
}

}  // namespace moejit::runtime
