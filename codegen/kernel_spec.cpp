#include "codegen/kernel_spec.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <stdexcept>

namespace moejit::codegen {
namespace {
constexpr std::pair<ParamType, std::string_view> k_param_names[] = {
    {ParamType::ptr, "ptr"}, {ParamType::u32, "u32"}, {ParamType::s32, "s32"},
    {ParamType::f32, "f32"}, {ParamType::u64, "u64"}, {ParamType::tensormap, "tensormap"},
};
}  // namespace

std::string_view param_type_name(ParamType t) {
  for (auto [type, name] : k_param_names)
    if (type == t) return name;
  return "?";
}

std::string_view ptx_param_type(ParamType t) {
  switch (t) {
    case ParamType::u32: return ".u32";
    case ParamType::s32: return ".u32";  // NVRTC declares int formals as .u32
    case ParamType::f32: return ".f32";
    case ParamType::ptr:
    case ParamType::u64:
    case ParamType::tensormap: return ".u64";
  }
  return ".u64";
}

std::int64_t KernelSpec::constant(std::string_view name) const {
  for (const auto& [n, v] : constants)
    if (n == name) return v;
  throw std::out_of_range(fmt::format("kernel spec '{}' has no constant '{}'", kernel, name));
}

std::string KernelSpec::ptx_formal_name(size_t index) const {
  return fmt::format("{}_param_{}", entry_name(), index);
}

std::string KernelSpec::summary() const {
  std::string args;
  for (const auto& [n, v] : constants) args += fmt::format("{}{}={}", args.empty() ? "" : ",", n, v);
  std::string extra = fmt::format(" threads={} min_blocks={}", threads, min_blocks_per_sm);
  if (target_blocks_per_sm) extra += fmt::format(" target_blocks={}", target_blocks_per_sm);
  if (max_registers) extra += fmt::format(" maxnreg={}", max_registers);
  // A kernel that one of several device functions implements (the compute role's atoms) names it.
  if (!device_function.empty() && device_function != "moejit::" + kernel) {
    const std::size_t colon = device_function.rfind("::");
    extra += fmt::format(" fn={}", colon == std::string::npos ? device_function : device_function.substr(colon + 2));
  }
  return fmt::format("{}<{}>{} @ {}", kernel, args, extra, target.name());
}

void to_json(nlohmann::json& j, const KernelSpec& s) {
  nlohmann::json params = nlohmann::json::array();
  for (const KernelParam& p : s.params)
    params.push_back({{"name", p.name},
                      {"type", param_type_name(p.type)},
                      {"cxx", p.cxx_type},
                      {"tensormap_uses", p.tensormap_uses}});
  nlohmann::json constants = nlohmann::json::array();
  for (const auto& [n, v] : s.constants) constants.push_back({n, v});
  nlohmann::json checks = nlohmann::json::array();
  for (const auto& [e, v] : s.static_checks) checks.push_back({e, v});
  j = {{"kernel", s.kernel},
       {"template", s.template_file},
       {"device_function", s.device_function},
       {"target", s.target.name()},
       {"constants", constants},
       {"threads", s.threads},
       {"min_blocks_per_sm", s.min_blocks_per_sm},
       {"target_blocks_per_sm", s.target_blocks_per_sm},
       {"max_registers", s.max_registers},
       {"params", params},
       {"params_struct", s.params_struct},
       {"static_checks", checks},
       {"required_instructions", s.required_instructions}};
}

void from_json(const nlohmann::json& j, KernelSpec& s) {
  s.kernel = j.at("kernel").get<std::string>();
  s.template_file = j.at("template").get<std::string>();
  s.device_function = j.at("device_function").get<std::string>();
  auto target = parse_target(j.at("target").get<std::string>());
  if (!target) throw std::invalid_argument("kernel spec: unknown target " + j.at("target").dump());
  s.target = *target;
  s.constants.clear();
  for (const auto& c : j.at("constants"))
    s.constants.emplace_back(c.at(0).get<std::string>(), c.at(1).get<std::int64_t>());
  s.threads = j.at("threads").get<int>();
  s.min_blocks_per_sm = j.at("min_blocks_per_sm").get<int>();
  s.target_blocks_per_sm = j.at("target_blocks_per_sm").get<int>();
  s.max_registers = j.at("max_registers").get<int>();
  s.params.clear();
  for (const auto& p : j.at("params")) {
    KernelParam param{p.at("name").get<std::string>(), ParamType::ptr, p.at("cxx").get<std::string>(),
                      p.at("tensormap_uses").get<int>()};
    const std::string type = p.at("type").get<std::string>();
    bool known = false;
    for (auto [t, name] : k_param_names)
      if (name == type) param.type = t, known = true;
    if (!known) throw std::invalid_argument("kernel spec: unknown param type '" + type + "'");
    s.params.push_back(std::move(param));
  }
  s.params_struct = j.value("params_struct", std::string());
  s.static_checks.clear();
  if (j.contains("static_checks"))
    for (const auto& c : j.at("static_checks"))
      s.static_checks.emplace_back(c.at(0).get<std::string>(), c.at(1).get<std::int64_t>());
  s.required_instructions = j.at("required_instructions").get<std::vector<std::string>>();
}

}  // namespace moejit::codegen
