#pragma once
// The argument vector of one launch, owned: every value copied into one byte
// buffer at its own aligned offset. It yields the void* array that
// cuLaunchKernelEx and graph kernel nodes take, and the bytes themselves,
// which is what the child-graph key hashes (tensormaps included).

#include <cstddef>
#include <cstring>
#include <string_view>
#include <type_traits>
#include <vector>

namespace moejit::runtime {

class KernelArgs {
 public:
  template <class T>
  KernelArgs& add(const T& value) {
    static_assert(std::is_trivially_copyable_v<T>);
    const std::size_t offset = (bytes_.size() + alignof(T) - 1) / alignof(T) * alignof(T);
    bytes_.resize(offset + sizeof(T), 0);
    std::memcpy(bytes_.data() + offset, &value, sizeof(T));
    offsets_.push_back(offset);
    return *this;
  }
  template <class T>
  KernelArgs& add_all(const std::vector<T>& values) {
    for (const T& v : values) add(v);
    return *this;
  }

  // One pointer per argument, into this object: valid until the next add().
  void** pointers() {
    pointers_.resize(offsets_.size());
    for (std::size_t i = 0; i < offsets_.size(); ++i) pointers_[i] = bytes_.data() + offsets_[i];
    return pointers_.data();
  }
  std::size_t size() const { return offsets_.size(); }
  std::string_view bytes() const { return {reinterpret_cast<const char*>(bytes_.data()), bytes_.size()}; }

 private:
  std::vector<unsigned char> bytes_;
  std::vector<std::size_t> offsets_;
  std::vector<void*> pointers_;
};

}  // namespace moejit::runtime
