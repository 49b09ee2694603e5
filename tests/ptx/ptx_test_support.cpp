#include "tests/ptx/ptx_test_support.hpp"

#include <doctest/doctest.h>
#include <llvm/ADT/SmallString.h>
#include <llvm/FileCheck/FileCheck.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/raw_ostream.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "codegen/device_profile.hpp"
#include "codegen/emit.hpp"
#include "codegen/moe_config.hpp"
#include "codegen/moe_kernels.hpp"
#include "codegen/nvrtc_compiler.hpp"
#include "runtime/moe_layer.hpp"

namespace moejit::test {

const std::string& nvrtc_ptx(const codegen::KernelSpec& spec) {
  static std::map<std::string, std::string> cache;
  static std::mutex lock;
  std::lock_guard guard(lock);
  const std::string key = nlohmann::json(spec).dump();
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  const codegen::PtxResult ptx = codegen::compile_to_ptx(codegen::emit_source(spec), spec.target);
  return cache.emplace(key, ptx.ptx).first->second;
}

const std::string& nvrtc_ptx(std::string_view kernel, codegen::Target target) {
  const codegen::BuiltinKernel* k = codegen::find_builtin_kernel(kernel);
  if (!k) throw std::invalid_argument("no built-in kernel " + std::string(kernel));
  return nvrtc_ptx(k->spec(target));
}

std::vector<codegen::KernelSpec> moe_specs(codegen::Target target) {
  const codegen::MoeConfig config = codegen::builtin_model("glm5.2");
  std::vector<codegen::KernelSpec> out;
  for (codegen::ComputePath path : {codegen::ComputePath::fast, codegen::ComputePath::exact}) {
    const codegen::AtomTraits* atom = codegen::find_atom(target, path);
    if (!atom) continue;
    codegen::MoeCodegenOptions options;
    options.path = path;
    const codegen::DeviceProfile profile = target.arch == codegen::Arch::sm_120a
                                               ? codegen::builtin_profile("rtx-pro-5000")
                                               : codegen::builtin_profile("h200");
    const codegen::MoeLaunchPlan plan = codegen::plan_launch(config, 8, profile, options);
    out.push_back(codegen::moe_compute_spec(config, plan));
    out.push_back(codegen::moe_finalize_spec(config, plan));
    if (auto d = codegen::moe_dispatch_spec(config, plan)) out.push_back(std::move(*d));
    out.push_back(codegen::moe_weight_transform_spec(config, *atom, target, codegen::Projection::w1));
  }
  return out;
}

std::vector<codegen::KernelSpec> all_kernel_specs() {
  std::vector<codegen::KernelSpec> out;
  for (const auto& [kernel, target] : kernels_on_targets()) out.push_back(kernel->spec(target));
  for (codegen::Target target : codegen::all_targets())
    for (codegen::KernelSpec& s : moe_specs(target)) out.push_back(std::move(s));
  return out;
}

std::vector<KernelOnTarget> kernels_on_targets() {
  std::vector<KernelOnTarget> out;
  for (const codegen::BuiltinKernel& k : codegen::builtin_kernels())
    for (codegen::Target t : codegen::all_targets())
      if (k.supports(t)) out.push_back({&k, t});
  return out;
}

codegen::Target sm90() {
  return codegen::Target{codegen::Arch::sm_90a};
}
codegen::Target sm100() {
  return codegen::Target{codegen::Arch::sm_100a};
}
codegen::Target sm120() {
  return codegen::Target{codegen::Arch::sm_120a};
}

std::string fixture_path(std::string_view name) {
  return std::string(MOEJIT_SOURCE_DIR) + "/tests/ptx/fixtures/" + std::string(name);
}

std::string read_fixture(std::string_view name) {
  std::ifstream in(fixture_path(name), std::ios::binary);
  if (!in) throw std::runtime_error("cannot read fixture " + fixture_path(name));
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<std::string> fixture_names() {
  std::vector<std::string> out;
  for (const auto& f : std::filesystem::directory_iterator(fixture_path("")))
    if (f.path().extension() == ".ptx") out.push_back(f.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

FileCheckResult filecheck(std::string_view input, std::string_view checks) {
  llvm::FileCheckRequest request;
  request.CheckPrefixes = {"CHECK"};
  request.CommentPrefixes = {"COM"};
  llvm::FileCheck fc(request);
  llvm::SourceMgr sm;
  FileCheckResult result;
  sm.setDiagHandler(
      [](const llvm::SMDiagnostic& d, void* out) {
        llvm::raw_string_ostream os(*static_cast<std::string*>(out));
        d.print("FileCheck", os, /*ShowColors=*/false);
      },
      &result.diagnostics);

  llvm::SmallString<4096> check_storage;
  auto check_buffer = llvm::MemoryBuffer::getMemBufferCopy(llvm::StringRef(checks.data(), checks.size()), "checks");
  const llvm::StringRef check_text = fc.CanonicalizeFile(*check_buffer, check_storage);
  sm.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBuffer(check_text, "checks", false), llvm::SMLoc());
  if (fc.readCheckFile(sm, check_text)) {
    result.diagnostics += "(the check patterns do not parse)";
    return result;
  }
  llvm::SmallString<4096> input_storage;
  auto input_buffer = llvm::MemoryBuffer::getMemBufferCopy(llvm::StringRef(input.data(), input.size()), "input");
  const llvm::StringRef input_text = fc.CanonicalizeFile(*input_buffer, input_storage);
  sm.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBuffer(input_text, "input", false), llvm::SMLoc());
  result.ok = fc.checkInput(sm, input_text);
  return result;
}

std::string replace_once(std::string text, std::string_view from, std::string_view to) {
  const size_t at = text.find(from);
  if (at == std::string::npos || text.find(from, at + 1) != std::string::npos)
    throw std::logic_error("test edit: '" + std::string(from) + "' does not occur exactly once");
  text.replace(at, from.size(), to);
  return text;
}

std::string line_with(const std::string& text, std::string_view needle) {
  const size_t at = text.find(needle);
  if (at == std::string::npos || text.find(needle, at + 1) != std::string::npos)
    throw std::logic_error("test lookup: '" + std::string(needle) + "' does not occur exactly once");
  const size_t begin = text.rfind('\n', at) + 1;  // npos + 1 == 0
  const size_t end = text.find('\n', at);
  return text.substr(begin, end - begin);
}

int line_of(const std::string& text, std::string_view needle) {
  line_with(text, needle);
  const size_t at = text.find(needle);
  return 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n'));
}

ptx::PassError expect_pass_error(const std::function<void()>& body) {
  try {
    body();
  } catch (const ptx::PassError& e) {
    return e;
  }
  FAIL("expected a PassError, none was thrown");
  throw std::logic_error("unreachable");
}

}  // namespace moejit::test
