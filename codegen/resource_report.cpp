#include "codegen/resource_report.hpp"

#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

namespace moejit::codegen {

const KernelResources* ResourceReport::find(std::string_view kernel) const {
  for (const KernelResources& k : kernels)
    if (k.name == kernel) return &k;
  return nullptr;
}

ResourceReport parse_resource_report(std::string_view info_log) {
  // ptxas info    : Compiling entry function 'k' for 'sm_90a'
  // ptxas info    : Function properties for k
  // ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
  // ptxas info    : Used 10 registers, used 1 barriers, 256 bytes smem
  // ptxas info    : Compile time = 16.314 ms
  // info    : used 10 registers, used 1 barriers, 0 stack, 1280 bytes smem, 548 bytes cmem[0], 0 bytes lmem
  static const std::regex entry(R"(ptxas info\s*: Compiling entry function '([^']+)')");
  static const std::regex frame(R"((\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads)");
  static const std::regex used(
      R"(ptxas info\s*: Used (\d+) registers(?:, used (\d+) barriers)?(?:, (\d+) bytes smem)?)");
  static const std::regex time(R"(ptxas info\s*: Compile time = ([0-9.]+) ms)");
  static const std::regex lmem(R"(^info\s*: used \d+ registers.*, (\d+) bytes lmem)");

  ResourceReport report;
  KernelResources* current = nullptr;
  std::istringstream lines{std::string(info_log)};
  std::string line;
  std::smatch m;
  while (std::getline(lines, line)) {
    if (std::regex_search(line, m, entry)) {
      report.kernels.push_back(KernelResources{m[1].str()});
      current = &report.kernels.back();
    } else if (!current) {
      continue;
    } else if (std::regex_search(line, m, frame)) {
      current->stack_frame_bytes = std::stoi(m[1]);
      current->spill_store_bytes = std::stoi(m[2]);
      current->spill_load_bytes = std::stoi(m[3]);
    } else if (std::regex_search(line, m, used)) {
      current->registers = std::stoi(m[1]);
      if (m[2].matched) current->barriers = std::stoi(m[2]);
      if (m[3].matched) current->shared_bytes = std::stoi(m[3]);
    } else if (std::regex_search(line, m, time)) {
      current->ptxas_millis = std::stod(m[1]);
    } else if (std::regex_search(line, m, lmem)) {
      current->local_bytes = std::stoi(m[1]);
    }
  }
  return report;
}

void to_json(nlohmann::json& j, const KernelResources& k) {
  j = {{"name", k.name},
       {"registers", k.registers},
       {"barriers", k.barriers},
       {"stack_frame_bytes", k.stack_frame_bytes},
       {"spill_store_bytes", k.spill_store_bytes},
       {"spill_load_bytes", k.spill_load_bytes},
       {"shared_bytes", k.shared_bytes},
       {"local_bytes", k.local_bytes},
       {"ptxas_millis", k.ptxas_millis}};
}

void from_json(const nlohmann::json& j, KernelResources& k) {
  k.name = j.at("name").get<std::string>();
  k.registers = j.at("registers").get<int>();
  k.barriers = j.at("barriers").get<int>();
  k.stack_frame_bytes = j.at("stack_frame_bytes").get<int>();
  k.spill_store_bytes = j.at("spill_store_bytes").get<int>();
  k.spill_load_bytes = j.at("spill_load_bytes").get<int>();
  k.shared_bytes = j.at("shared_bytes").get<int>();
  k.local_bytes = j.at("local_bytes").get<int>();
  k.ptxas_millis = j.at("ptxas_millis").get<double>();
}

void to_json(nlohmann::json& j, const ResourceReport& r) {
  j = {{"kernels", r.kernels}};
}
void from_json(const nlohmann::json& j, ResourceReport& r) {
  r.kernels = j.at("kernels").get<std::vector<KernelResources>>();
}

}  // namespace moejit::codegen
