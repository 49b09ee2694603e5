#include "codegen/compiler_identity.hpp"

#include <nvJitLink.h>
#include <nvrtc.h>

#include <nlohmann/json.hpp>
#include <regex>

#include "codegen/nvjitlink_linker.hpp"
#include "codegen/nvrtc_compiler.hpp"

namespace moejit::codegen {
namespace {
ToolchainVersion probe_toolchain() {
  ToolchainVersion v;
  nvrtcVersion(&v.nvrtc_major, &v.nvrtc_minor);
  unsigned major = 0, minor = 0;
  nvJitLinkVersion(&major, &minor);
  v.nvjitlink_major = static_cast<int>(major);
  v.nvjitlink_minor = static_cast<int>(minor);
  // NVRTC reports only major.minor; the PTX header names the exact release and build.
  EmittedSource probe{"moejit_identity_probe.cu", "extern \"C\" __global__ void moejit_probe() {}\n", {}};
  const std::string ptx = compile_to_ptx(probe, Target{Arch::sm_90a}).ptx;
  std::smatch m;
  static const std::regex release(R"(Cuda compilation tools, (release [0-9.]+, V[0-9.]+))");
  static const std::regex build(R"(Compiler Build ID: (\S+))");
  if (std::regex_search(ptx, m, release)) v.nvrtc_release = m[1].str();
  if (std::regex_search(ptx, m, build)) v.nvrtc_build = m[1].str();
  // nvJitLink reports only major.minor too; the cubin's toolkit note names its ptxas's release.
  const std::vector<char> cubin = assemble_cubin(ptx, Target{Arch::sm_90a}, "moejit_identity_probe.ptx").cubin;
  const std::string bytes(cubin.begin(), cubin.end());
  if (std::regex_search(bytes, m, release)) v.nvjitlink_release = m[1].str();
  return v;
}
}  // namespace

const ToolchainVersion& toolchain_version() {
  static const ToolchainVersion v = probe_toolchain();
  return v;
}

CompilerIdentity compiler_identity(Target target) {
  return CompilerIdentity{toolchain_version(), target, nvrtc_options(target), nvjitlink_options(target)};
}

void to_json(nlohmann::json& j, const ToolchainVersion& v) {
  j = {{"nvrtc", {v.nvrtc_major, v.nvrtc_minor}},
       {"nvjitlink", {v.nvjitlink_major, v.nvjitlink_minor}},
       {"nvrtc_release", v.nvrtc_release},
       {"nvrtc_build", v.nvrtc_build},
       {"nvjitlink_release", v.nvjitlink_release}};
}

void from_json(const nlohmann::json& j, ToolchainVersion& v) {
  v.nvrtc_major = j.at("nvrtc").at(0).get<int>();
  v.nvrtc_minor = j.at("nvrtc").at(1).get<int>();
  v.nvjitlink_major = j.at("nvjitlink").at(0).get<int>();
  v.nvjitlink_minor = j.at("nvjitlink").at(1).get<int>();
  v.nvrtc_release = j.at("nvrtc_release").get<std::string>();
  v.nvrtc_build = j.at("nvrtc_build").get<std::string>();
  v.nvjitlink_release = j.value("nvjitlink_release", std::string());  // absent from entries before 2026-12-05
}

void to_json(nlohmann::json& j, const CompilerIdentity& id) {
  j = {{"toolchain", id.toolchain},
       {"target", id.target.name()},
       {"nvrtc_options", id.nvrtc_options},
       {"nvjitlink_options", id.nvjitlink_options}};
}

void from_json(const nlohmann::json& j, CompilerIdentity& id) {
  id.toolchain = j.at("toolchain").get<ToolchainVersion>();
  auto target = parse_target(j.at("target").get<std::string>());
  if (!target) throw std::invalid_argument("compiler identity: unknown target " + j.at("target").dump());
  id.target = *target;
  id.nvrtc_options = j.at("nvrtc_options").get<std::vector<std::string>>();
  id.nvjitlink_options = j.at("nvjitlink_options").get<std::vector<std::string>>();
}

}  // namespace moejit::codegen
