#include "codegen/nvrtc_compiler.hpp"

#include <fmt/format.h>
#include <nvrtc.h>

#include <chrono>
#include <filesystem>

namespace moejit::codegen {
namespace {
void check(nvrtcResult r, const char* what) {
  if (r != NVRTC_SUCCESS) throw CompileError(fmt::format("{} failed: {}", what, nvrtcGetErrorString(r)));
}

struct Program {
  nvrtcProgram handle = nullptr;
  ~Program() {
    if (handle) nvrtcDestroyProgram(&handle);
  }
};

std::string program_log(nvrtcProgram p) {
  size_t size = 0;
  if (nvrtcGetProgramLogSize(p, &size) != NVRTC_SUCCESS || size <= 1) return {};
  std::string log(size, '\0');
  nvrtcGetProgramLog(p, log.data());
  log.resize(size - 1);
  return log;
}

// With -lineinfo NVRTC names the program and its in-memory headers in `.file` directives as paths under the
// working directory: the same key's PTX (and cubin) differed by where it was built, and an exported bundle
// carried the builder's folders. They become /moejit/<name>.
std::string without_working_directory(std::string ptx) {
  std::error_code ec;
  const std::string cwd = std::filesystem::current_path(ec).string();
  if (ec || cwd.empty()) return ptx;
  const std::string from = "\"" + cwd + (cwd.back() == '/' ? "" : "/"), to = "\"/moejit/";
  for (std::size_t at = ptx.find("\t.file\t"); at != std::string::npos; at = ptx.find("\t.file\t", at + 1)) {
    const std::size_t line_end = ptx.find('\n', at);
    const std::size_t quote = ptx.find(from, at);
    if (quote != std::string::npos && quote < line_end) ptx.replace(quote, from.size(), to);
  }
  return ptx;
}
}  // namespace

std::vector<std::string> nvrtc_options(Target) {
  // -std=c++20: the entries build their parameter structs with designated
  // initializers, so a field moved or renamed in a template fails to compile.
  // -default-device: host functions in templates would otherwise need __device__.
  // IEEE division and denormals: the numerics (seed §5.4) are specified without fast math.
  return {"-std=c++20", "-default-device", "--ftz=false", "--prec-div=true", "-DNDEBUG", "-lineinfo"};
}

PtxResult compile_to_ptx(const EmittedSource& source, Target target) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<const char*> header_text, header_names;
  for (const auto& [name, text] : source.headers) {
    header_names.push_back(name.c_str());
    header_text.push_back(text.c_str());
  }
  Program prog;
  check(nvrtcCreateProgram(&prog.handle, source.text.c_str(), source.name.c_str(), static_cast<int>(header_text.size()),
                           header_text.data(), header_names.data()),
        "nvrtcCreateProgram");
  std::vector<std::string> options = nvrtc_options(target);
  options.insert(options.begin(), fmt::format("-arch={}", target.virtual_arch()));
  std::vector<const char*> argv;
  for (const std::string& o : options) argv.push_back(o.c_str());

  const nvrtcResult r = nvrtcCompileProgram(prog.handle, static_cast<int>(argv.size()), argv.data());
  PtxResult out;
  out.log = program_log(prog.handle);
  if (r != NVRTC_SUCCESS)
    throw CompileError(fmt::format("NVRTC failed to compile {} for {}: {}\n{}", source.name, target.virtual_arch(),
                                   nvrtcGetErrorString(r), out.log));
  size_t size = 0;
  check(nvrtcGetPTXSize(prog.handle, &size), "nvrtcGetPTXSize");
  out.ptx.resize(size);
  check(nvrtcGetPTX(prog.handle, out.ptx.data()), "nvrtcGetPTX");
  if (!out.ptx.empty() && out.ptx.back() == '\0') out.ptx.pop_back();
  out.ptx = without_working_directory(std::move(out.ptx));
  out.millis = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return out;
}

}  // namespace moejit::codegen
