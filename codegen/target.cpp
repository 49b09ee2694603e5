#include "codegen/target.hpp"

namespace moejit::codegen {
namespace {
struct ArchInfo {
  Arch arch;
  std::string_view name;
  std::string_view virtual_arch;
  int cc;
};
constexpr ArchInfo k_arches[] = {
    {Arch::sm_90a, "sm_90a", "compute_90a", 90},
    {Arch::sm_100a, "sm_100a", "compute_100a", 100},
    {Arch::sm_120a, "sm_120a", "compute_120a", 120},
};
const ArchInfo& info(Arch a) {
  for (const ArchInfo& i : k_arches)
    if (i.arch == a) return i;
  return k_arches[0];
}
}  // namespace

std::string_view Target::name() const {
  return info(arch).name;
}
std::string_view Target::virtual_arch() const {
  return info(arch).virtual_arch;
}
int Target::compute_capability() const {
  return info(arch).cc;
}

std::optional<Target> parse_target(std::string_view text) {
  for (const ArchInfo& i : k_arches)
    if (text == i.name || text == i.name.substr(3) || text == i.virtual_arch) return Target{i.arch};
  return std::nullopt;
}

std::vector<Target> all_targets() {
  std::vector<Target> out;
  for (const ArchInfo& i : k_arches) out.push_back(Target{i.arch});
  return out;
}

std::string target_names() {
  std::string out;
  for (const ArchInfo& i : k_arches) out += (out.empty() ? "" : ", ") + std::string(i.name);
  return out;
}

}  // namespace moejit::codegen
