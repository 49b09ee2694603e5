#include "runtime/kernel_args.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace moejit::runtime {

NamedArgs& NamedArgs::put(std::string name, codegen::ParamType type, const void* value, std::size_t size) {
  Arg a{std::move(name), type, std::vector<unsigned char>(size)};
  std::memcpy(a.bytes.data(), value, size);
  args_.push_back(std::move(a));
  return *this;
}

KernelArgs NamedArgs::bind(const codegen::KernelSpec& spec) const {
  for (const Arg& a : args_) {
    const auto same = [&](const Arg& b) { return b.name == a.name; };
    if (std::count_if(args_.begin(), args_.end(), same) > 1)
      throw std::invalid_argument(fmt::format("{}: argument '{}' is given twice", spec.kernel, a.name));
    if (std::none_of(spec.params.begin(), spec.params.end(),
                     [&](const codegen::KernelParam& p) { return p.name == a.name; }))
      throw std::invalid_argument(fmt::format("{}: argument '{}' is not a formal of the kernel", spec.kernel, a.name));
  }
  KernelArgs out;
  for (const codegen::KernelParam& p : spec.params) {
    const auto it = std::find_if(args_.begin(), args_.end(), [&](const Arg& a) { return a.name == p.name; });
    if (it == args_.end())
      throw std::invalid_argument(
          fmt::format("{}: argument '{}' ({}) is missing", spec.kernel, p.name, codegen::param_type_name(p.type)));
    const bool compatible =
        it->type == p.type || (it->type == codegen::ParamType::u32 && p.type == codegen::ParamType::s32);
    if (!compatible)
      throw std::invalid_argument(fmt::format("{}: argument '{}' is {} ({} bytes), the formal is {}", spec.kernel,
                                              p.name, codegen::param_type_name(it->type), it->bytes.size(),
                                              codegen::param_type_name(p.type)));
    switch (p.type) {
      case codegen::ParamType::ptr:
      case codegen::ParamType::u64: {
        std::uint64_t v;
        std::memcpy(&v, it->bytes.data(), 8);
        out.add(v);
        break;
      }
      case codegen::ParamType::f32: {
        float v;
        std::memcpy(&v, it->bytes.data(), 4);
        out.add(v);
        break;
      }
      case codegen::ParamType::u32:
      case codegen::ParamType::s32: {
        std::uint32_t v;
        std::memcpy(&v, it->bytes.data(), 4);
        out.add(v);
        break;
      }
      case codegen::ParamType::tensormap: {
        TensorMapBlob blob;
        std::memcpy(blob.bytes.data(), it->bytes.data(), blob.bytes.size());
        out.add(blob);
        break;
      }
    }
  }
  return out;
}

}  // namespace moejit::runtime
