#include "tools/precompile.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <nlohmann/json.hpp>
#include <unordered_set>

#include "codegen/moe_kernels.hpp"
#include "codegen/planner.hpp"
#include "codegen/smoke_kernel.hpp"
#include "tools/cli_args.hpp"

namespace moejit::tools {
namespace {
int parse_positive(std::string_view text, std::string_view whole) {
  int v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v < 1)
    throw UsageError(fmt::format("--batches: '{}' in '{}' is not a positive integer", excerpt(text), excerpt(whole)));
  return v;
}

// The kernels one (profile, batch) shape needs: the MoE layer's plan for it or,
// with no configuration, what codegen emits on its own (the smoke kernel).
std::vector<codegen::KernelSpec> kernels_for_shape(const codegen::MoeConfig* config,
                                                   const codegen::DeviceProfile& profile, int batch,
                                                   const codegen::MoeCodegenOptions& options) {
  if (!config) return {codegen::smoke_kernel_spec(profile.target)};
  try {
    return codegen::moe_kernel_specs(*config, batch, profile, options);
  } catch (const codegen::PlanError& e) {
    throw std::runtime_error(fmt::format("B = {} cannot be planned on {} ({}): {}; leave it out of --batches", batch,
                                         profile.name, profile.target.name(), e.what()));
  }
}
}  // namespace

codegen::DeviceProfile profile_for(codegen::Target target) {
  for (const std::string& name : codegen::builtin_profile_names())
    if (codegen::DeviceProfile p = codegen::builtin_profile(name); p.target == target) return p;
  throw UsageError(fmt::format("--targets: no built-in device profile plans for {} (profiles: {})", target.name(),
                               fmt::join(codegen::builtin_profile_names(), ", ")));
}

std::vector<int> parse_batches(std::string_view text) {
  std::vector<int> out;
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t comma = std::min(text.find(',', pos), text.size());
    const std::string_view part = text.substr(pos, comma - pos);
    if (const size_t dash = part.find('-'); dash != std::string_view::npos) {
      const int lo = parse_positive(part.substr(0, dash), text), hi = parse_positive(part.substr(dash + 1), text);
      if (lo > hi) throw UsageError(fmt::format("--batches: range '{}' is empty", excerpt(part)));
      if (hi > 65536) throw UsageError(fmt::format("--batches: {} exceeds the maximum of 65536", hi));
      for (int b = lo; b <= hi; ++b) out.push_back(b);
    } else {
      out.push_back(parse_positive(part, text));
    }
    pos = comma + 1;
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<codegen::Target> parse_targets(std::string_view text) {
  std::vector<codegen::Target> out;
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t comma = std::min(text.find(',', pos), text.size());
    const std::string_view name = text.substr(pos, comma - pos);
    auto t = codegen::parse_target(name);
    if (!t) throw UsageError(fmt::format("--targets: '{}' is not one of {}", excerpt(name), codegen::target_names()));
    if (std::find(out.begin(), out.end(), *t) == out.end()) out.push_back(*t);
    pos = comma + 1;
  }
  return out;
}

std::vector<codegen::KernelSpec> kernels_to_precompile(const PrecompileRequest& request) {
  if (request.config) {
    codegen::validate(*request.config);
    for (int b : request.batches) codegen::validate_batch(*request.config, b);
  }
  std::vector<codegen::KernelSpec> out;
  std::unordered_set<std::string> seen;  // by the spec's JSON: equal specs, equal text
  for (codegen::Target target : request.targets) {
    const codegen::DeviceProfile profile = request.config ? profile_for(target) : codegen::DeviceProfile{"", target};
    for (int batch : request.batches)
      for (codegen::KernelSpec& spec :
           kernels_for_shape(request.config ? &*request.config : nullptr, profile, batch, request.options))
        if (seen.insert(nlohmann::json(spec).dump()).second) out.push_back(std::move(spec));
  }
  return out;
}

}  // namespace moejit::tools
