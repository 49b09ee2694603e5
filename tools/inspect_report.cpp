#include "tools/inspect_report.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <stdexcept>
#include <utility>
#include <vector>

#include "cache/fs_util.hpp"
#include "ptx_passes/pipeline.hpp"
#include "ptx_passes/pipeline_version.hpp"
#include "ptx_passes/unified_diff.hpp"
#include "tools/cli_args.hpp"

namespace moejit::tools {
namespace {
// Written beside its name and renamed over it: a link or FIFO left under the name (a dump folder in /tmp that
// another user can write) is replaced, never followed or opened.
void write_file(const cache::fs::Dir& dir, const std::string& name, std::string_view bytes) {
  const std::string tmp = name + ".tmp-" + cache::fs::unique_suffix();
  std::string error;
  if (!cache::fs::write_file_synced(dir, tmp, bytes, &error)) {
    cache::fs::remove_tree(dir, tmp);
    throw std::runtime_error(error);
  }
  if (const int err = cache::fs::rename_in(dir, tmp, name); err != 0) {
    cache::fs::remove_tree(dir, tmp);
    throw std::runtime_error(fmt::format("cannot write {}: {}", dir.path_of(name), cache::fs::error_text(err)));
  }
}

const std::string& ptx_before(const jit::BuildArtifacts& built, size_t stage) {
  return stage == 0 ? built.ptx : built.stages[stage - 1].ptx;
}

std::string pass_diff(const jit::BuildArtifacts& built, const InspectView& view, size_t i) {
  const std::string& pass = built.stages[i].pass;
  return ptx::unified_diff(ptx_before(built, i), built.stages[i].ptx,
                           fmt::format("{} (before {})", view.buffer_name, pass),
                           fmt::format("{} (after {})", view.buffer_name, pass));
}
}  // namespace

std::optional<InspectStage> parse_inspect_stage(std::string_view text) {
  if (text == "source") return InspectStage::source;
  if (text == "ptx") return InspectStage::ptx;
  if (text == "passes") return InspectStage::passes;
  if (text == "final") return InspectStage::final_ptx;
  if (text == "resources") return InspectStage::resources;
  if (text == "all") return InspectStage::all;
  return std::nullopt;
}

std::string format_passes(const jit::BuildArtifacts& built, const InspectView& view) {
  const std::vector<std::string> passes = ptx::pipeline_pass_names();
  std::string names;
  for (const std::string& p : passes) names += (names.empty() ? "" : ", ") + p;
  std::string out =
      fmt::format("pass pipeline v{}: {} ({:.2f} ms)\n", ptx::k_pass_pipeline_version, names, built.passes_millis);
  const size_t n = passes.size();
  for (size_t i = 0; i < built.stages.size(); ++i) {
    const ptx::PassStage& s = built.stages[i];
    if (s.skipped) {
      out += fmt::format("\n== pass {}/{} {}: skipped: {}\n", i + 1, n, s.pass, s.skip_reason);
      continue;
    }
    const std::string diff = pass_diff(built, view, i);
    out += fmt::format("\n== pass {}/{} {}: {}\n", i + 1, n, s.pass, diff.empty() ? "module unchanged" : "changed");
    for (const std::string& line : s.summary) out += "   " + line + "\n";
    out += diff;
  }
  // A build that stopped in a pass has fewer stages than passes.
  for (size_t i = built.stages.size(); i < n; ++i)
    out += fmt::format("\n== pass {}/{} {}: {}\n", i + 1, n, passes[i],
                       i == built.stages.size() ? "FAILED (the error follows)" : "not run");
  return out;
}

std::string format_resources(const jit::BuildArtifacts& built) {
  if (built.cubin.empty()) return "resources: none (nothing was assembled)\n";
  std::string out = fmt::format("resources (nvJitLink -arch={}, {:.1f} ms, cubin {} bytes)\n", built.spec.target.name(),
                                built.link_millis, built.cubin.size());
  if (built.resources.kernels.empty()) out += "   nvJitLink reported no kernels; its log:\n" + built.link_log + "\n";
  for (const codegen::KernelResources& k : built.resources.kernels)
    out += fmt::format(
        "   {}: {} registers, {} barriers, {} B stack, {} B spill stores, {} B spill loads, {} B smem, {} B lmem\n",
        k.name, k.registers, k.barriers, k.stack_frame_bytes, k.spill_store_bytes, k.spill_load_bytes, k.shared_bytes,
        k.local_bytes);
  return out;
}

void print_inspect(const jit::BuildArtifacts& built, const InspectView& view, InspectStage stage) {
  const bool all = stage == InspectStage::all;
  fmt::print("inspect {}\n", view.title);
  if ((all || stage == InspectStage::source) && !built.source.text.empty()) {
    std::string headers;
    for (const auto& [name, text] : built.source.headers) headers += (headers.empty() ? "" : ", ") + name;
    fmt::print("\n== source {} (includes {})\n{}", built.source.name, headers, built.source.text);
  }
  if (all || stage == InspectStage::ptx)
    fmt::print("\n== ptx {} (input to the passes)\n{}", view.buffer_name, built.ptx);
  if (all || stage == InspectStage::passes) fmt::print("\n{}", format_passes(built, view));
  if ((all || stage == InspectStage::final_ptx) && !built.cubin.empty())
    fmt::print("\n== final ptx (assembled)\n{}", built.final_ptx);
  if (all || stage == InspectStage::resources || stage == InspectStage::passes)
    fmt::print("\n{}", format_resources(built));
}

int write_inspect_dump(const jit::BuildArtifacts& built, const InspectView& view, const std::filesystem::path& dir,
                       const std::optional<std::string>& input) {
  std::vector<std::pair<std::string, std::string>> files;
  if (!built.source.text.empty()) files.emplace_back("source.cu", built.source.text);
  files.emplace_back(view.input_ptx_file, built.ptx);
  for (size_t i = 0; i < built.stages.size(); ++i) {
    const std::string stem = fmt::format("{:02}-{}", i + 1, built.stages[i].pass);
    files.emplace_back(stem + ".ptx", built.stages[i].ptx);
    files.emplace_back(stem + ".diff", pass_diff(built, view, i));
  }
  if (!built.cubin.empty()) {  // else the build stopped before nvJitLink finished
    files.emplace_back("final.ptx", built.final_ptx);
    const nlohmann::json resources = built.resources;
    files.emplace_back("resources.json", resources.dump(2) + "\n");
    files.emplace_back("kernel.cubin", std::string(built.cubin.data(), built.cubin.size()));
  }
  std::filesystem::create_directories(dir);
  for (const auto& [name, bytes] : files) {
    std::error_code ec;
    if (input && std::filesystem::equivalent(dir / name, *input, ec))
      throw UsageError(fmt::format("--dump-dir: writing {} would overwrite the input '{}'; dump into another folder",
                                   (dir / name).string(), excerpt(*input)));
  }
  std::string error;
  const cache::fs::Dir out = cache::fs::Dir::open(dir.string(), &error);
  if (!out) throw std::runtime_error(error);
  for (const auto& [name, bytes] : files) write_file(out, name, bytes);
  return static_cast<int>(files.size());
}

}  // namespace moejit::tools
