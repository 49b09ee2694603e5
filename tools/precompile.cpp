#include "tools/precompile.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <nlohmann/json.hpp>
#include <unordered_set>

#include "codegen/smoke_kernel.hpp"
#include "runtime/moe_layer.hpp"
#include "tools/cli_args.hpp"

namespace moejit::tools {
namespace {
int parse_positive(std::string_view text, std::string_view whole) {
  int v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v < 1)
    throw UsageError(fmt::format("--batches: '{}' in '{}' is not a positive integer", text, whole));
  return v;
}

// The layer's configuration on one rank: --ranks splits the experts.
reference::MoeProblem local_problem(const PrecompileRequest& r) {
  reference::MoeProblem p = *r.problem;
  if (p.experts % r.ranks != 0)
    throw UsageError(fmt::format("--ranks: {} does not divide the {} experts", r.ranks, p.experts));
  p.experts /= r.ranks;
  return p;
}

// The kernels one (target, batch) shape needs: the MoE layer's plan for that
// shape or, with no configuration, what codegen emits on its own (the smoke kernel).
std::vector<codegen::KernelSpec> kernels_for_shape(const reference::MoeProblem* problem, codegen::Target target,
                                                   int batch) {
  if (!problem) return {codegen::smoke_kernel_spec(target)};
  return runtime::moe_kernel_specs(*problem, runtime::MoeLayerOptions{}, batch, target, profile_smem_per_sm(target));
}
}  // namespace

reference::MoeProblem read_config_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw UsageError(fmt::format("--config: cannot read '{}'", path));
  const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded() || !j.is_object()) throw UsageError(fmt::format("--config: '{}' is not a JSON object", path));
  auto field = [&](const char* name) {
    if (!j.contains(name) || !j.at(name).is_number_integer())
      throw UsageError(fmt::format("--config: '{}' needs an integer \"{}\"", path, name));
    return j.at(name).get<int>();
  };
  reference::MoeProblem p;
  p.experts = field("experts");
  p.top_k = field("top_k");
  p.hidden = field("hidden");
  p.intermediate = field("intermediate");
  if (j.contains("clamp")) {
    if (!j.at("clamp").is_number()) throw UsageError(fmt::format("--config: '{}': \"clamp\" is not a number", path));
    p.clamp = j.at("clamp").get<float>();
  }
  return p;
}

int profile_smem_per_sm(codegen::Target target) {
  switch (target.arch) {
    case codegen::Arch::sm_90a: return 228 * 1024;
    case codegen::Arch::sm_100a: return 228 * 1024;
    case codegen::Arch::sm_120a: return 100 * 1024;
  }
  return 228 * 1024;
}

std::vector<int> parse_batches(std::string_view text) {
  std::vector<int> out;
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t comma = std::min(text.find(',', pos), text.size());
    const std::string_view part = text.substr(pos, comma - pos);
    if (const size_t dash = part.find('-'); dash != std::string_view::npos) {
      const int lo = parse_positive(part.substr(0, dash), text), hi = parse_positive(part.substr(dash + 1), text);
      if (lo > hi) throw UsageError(fmt::format("--batches: range '{}' is empty", part));
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
    if (!t) throw UsageError(fmt::format("--targets: '{}' is not one of {}", name, codegen::target_names()));
    if (std::find(out.begin(), out.end(), *t) == out.end()) out.push_back(*t);
    pos = comma + 1;
  }
  return out;
}

std::vector<codegen::KernelSpec> kernels_to_precompile(const PrecompileRequest& request) {
  std::optional<reference::MoeProblem> problem;
  if (request.problem) {
    problem = local_problem(request);
    const runtime::MoeLayerOptions options;
    try {
      runtime::validate_problem(*problem, options);
    } catch (const runtime::InvalidInput& e) {
      throw UsageError(fmt::format("{}: {}", request.source, e.what()));
    }
    if (!request.batches.empty() && request.batches.back() > options.token_capacity)
      throw UsageError(fmt::format("--batches: {} exceeds the layer's token capacity of {}", request.batches.back(),
                                   options.token_capacity));
  }
  std::vector<codegen::KernelSpec> out;
  std::unordered_set<std::string> seen;  // by the spec's JSON: equal specs, equal text
  for (codegen::Target target : request.targets)
    for (int batch : request.batches)
      for (codegen::KernelSpec& spec : kernels_for_shape(problem ? &*problem : nullptr, target, batch))
        if (seen.insert(nlohmann::json(spec).dump()).second) out.push_back(std::move(spec));
  return out;
}

}  // namespace moejit::tools
