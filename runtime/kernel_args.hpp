#pragma once
// The argument vector of one launch, owned: every value copied into one byte
// buffer at its own aligned offset. It yields the void* array that
// cuLaunchKernelEx and graph kernel nodes take, and the bytes themselves,
// which is what the child-graph key hashes (tensormaps included).

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "codegen/kernel_spec.hpp"
#include "runtime/tensor_map.hpp"

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

// A kernel's arguments by formal name. bind() orders them as the spec's
// params and checks each against its formal (present once, the formal's
// type and size) before anything launches, so a host that passes an argument
// the kernel does not take, or of another type, fails naming it.
class NamedArgs {
 public:
  NamedArgs& ptr(std::string name, std::uint64_t device_pointer) {
    return put(std::move(name), codegen::ParamType::ptr, &device_pointer, 8);
  }
  NamedArgs& u32(std::string name, std::uint32_t v) { return put(std::move(name), codegen::ParamType::u32, &v, 4); }
  NamedArgs& f32(std::string name, float v) { return put(std::move(name), codegen::ParamType::f32, &v, 4); }
  // A TensorMap by value (the tensormap-by-value pass made the formal 128 bytes).
  NamedArgs& map(std::string name, const TensorMapBlob& blob) {
    return put(std::move(name), codegen::ParamType::tensormap, blob.bytes.data(), blob.bytes.size());
  }

  // Throws std::invalid_argument naming the kernel and the argument.
  KernelArgs bind(const codegen::KernelSpec& spec) const;

 private:
  struct Arg {
    std::string name;
    codegen::ParamType type;
    std::vector<unsigned char> bytes;
  };
  NamedArgs& put(std::string name, codegen::ParamType type, const void* value, std::size_t size);
  std::vector<Arg> args_;
};

}  // namespace moejit::runtime
