#include "codegen/nvjitlink_linker.hpp"

#include <fmt/format.h>
#include <nvJitLink.h>

#include <chrono>

namespace moejit::codegen {
namespace {
struct Linker {
  nvJitLinkHandle handle = nullptr;
  ~Linker() {
    if (handle) nvJitLinkDestroy(&handle);
  }
  std::string error_log() const {
    size_t size = 0;
    if (nvJitLinkGetErrorLogSize(handle, &size) != NVJITLINK_SUCCESS || size <= 1) return {};
    std::string log(size, '\0');
    nvJitLinkGetErrorLog(handle, log.data());
    log.resize(size - 1);
    return log;
  }
  std::string info_log() const {
    size_t size = 0;
    if (nvJitLinkGetInfoLogSize(handle, &size) != NVJITLINK_SUCCESS || size <= 1) return {};
    std::string log(size, '\0');
    nvJitLinkGetInfoLog(handle, log.data());
    log.resize(size - 1);
    return log;
  }
};
}  // namespace

std::vector<std::string> nvjitlink_options(Target) {
  return {"-O3", "-verbose"};
}

CubinResult assemble_cubin(const std::string& ptx, Target target, const std::string& name) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::string> options = nvjitlink_options(target);
  options.insert(options.begin(), fmt::format("-arch={}", target.name()));
  std::vector<const char*> argv;
  for (const std::string& o : options) argv.push_back(o.c_str());

  Linker link;
  nvJitLinkResult r = nvJitLinkCreate(&link.handle, static_cast<uint32_t>(argv.size()), argv.data());
  if (r != NVJITLINK_SUCCESS)  // the handle, when nvJitLink made one, holds why (an unknown -arch, an option)
    throw CompileError(fmt::format("nvJitLinkCreate for {} failed (code {}){}", target.name(), int(r),
                                   link.handle ? ":\n" + link.error_log() : std::string()));
  r = nvJitLinkAddData(link.handle, NVJITLINK_INPUT_PTX, ptx.data(), ptx.size(), name.c_str());
  if (r == NVJITLINK_SUCCESS) r = nvJitLinkComplete(link.handle);
  if (r != NVJITLINK_SUCCESS)
    throw CompileError(fmt::format("nvJitLink failed to assemble {} for {} (code {}):\n{}", name, target.name(), int(r),
                                   link.error_log()));
  CubinResult out;
  size_t size = 0;
  if (nvJitLinkGetLinkedCubinSize(link.handle, &size) != NVJITLINK_SUCCESS || size == 0)
    throw CompileError(fmt::format("nvJitLink produced no cubin for {}", name));
  out.cubin.resize(size);
  if (nvJitLinkGetLinkedCubin(link.handle, out.cubin.data()) != NVJITLINK_SUCCESS)
    throw CompileError(fmt::format("nvJitLink could not copy out the cubin of {}", name));
  out.info_log = link.info_log();
  out.resources = parse_resource_report(out.info_log);
  out.millis = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return out;
}

}  // namespace moejit::codegen
