#include "runtime/tensor_map_cache.hpp"

namespace moejit::runtime {

std::size_t TensorMapKeyHash::operator()(const TensorMapKey& k) const noexcept {
  std::size_t h = std::hash<std::uint64_t>{}(k.base);
  h ^= std::hash<std::uint64_t>{}(k.rows) + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
  h ^= std::hash<std::uint32_t>{}(k.box_rows) + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
  return h ^ static_cast<std::size_t>(k.kind);
}

TensorMapCache& TensorMapCache::global() {
  static TensorMapCache cache;
  return cache;
}

TensorMapBlob TensorMapCache::weight_tile_map(CUdeviceptr payload, std::uint64_t rows, std::uint32_t box_rows) {
  const TensorMapKey key{TensorMapKey::Kind::weight_tile, payload, rows, box_rows};
  std::lock_guard lock(mutex_);
  if (auto it = maps_.find(key); it != maps_.end()) {
    ++hits_;
    return it->second;
  }
  ++misses_;
  return maps_.emplace(key, encode_weight_tile_map(payload, rows, box_rows)).first->second;
}

std::uint64_t TensorMapCache::hits() const {
  std::lock_guard lock(mutex_);
  return hits_;
}
std::uint64_t TensorMapCache::misses() const {
  std::lock_guard lock(mutex_);
  return misses_;
}

}  // namespace moejit::runtime
