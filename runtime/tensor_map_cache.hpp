#pragma once
// TensorMaps cached by the pointer set and shape they embed (DESIGN.md
// "Runtime"). A descriptor holds nothing but the base address and the
// geometry, so a key of exactly those can never yield a stale descriptor:
// an allocation recycled at a new address is a new key (a new encode), and
// one recycled at the same address with the same shape would encode to the
// same 128 bytes anyway.

#include <cstdint>
#include <mutex>
#include <unordered_map>

#include "runtime/tensor_map.hpp"

namespace moejit::runtime {

struct TensorMapKey {
  enum class Kind : std::uint8_t { weight_tile } kind = Kind::weight_tile;
  CUdeviceptr base = 0;
  std::uint64_t rows = 0;
  std::uint32_t box_rows = 0;
  friend bool operator==(const TensorMapKey&, const TensorMapKey&) = default;
};

struct TensorMapKeyHash {
  std::size_t operator()(const TensorMapKey& k) const noexcept;
};

class TensorMapCache {
 public:
  static TensorMapCache& global();

  // The weight-tile map of encode_weight_tile_map(payload, rows, box_rows), encoded on a miss.
  TensorMapBlob weight_tile_map(CUdeviceptr payload, std::uint64_t rows, std::uint32_t box_rows);

  std::uint64_t hits() const;
  std::uint64_t misses() const;

 private:
  mutable std::mutex mutex_;
  std::unordered_map<TensorMapKey, TensorMapBlob, TensorMapKeyHash> maps_;
  std::uint64_t hits_ = 0, misses_ = 0;
};

}  // namespace moejit::runtime
