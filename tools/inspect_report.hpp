#pragma once
// What `moejit inspect` prints and dumps for one build: the emitted source,
// the NVRTC (or input) PTX, a unified diff per pass, the final PTX and the
// nvJitLink resource report. Independent of where the build came from (a
// built-in kernel, a model configuration, a user's PTX file).

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "jit/kernel_builder.hpp"

namespace moejit::tools {

enum class InspectStage { source, ptx, passes, final_ptx, resources, all };

// "source", "ptx", "passes", "final", "resources", "all"; nullopt otherwise.
std::optional<InspectStage> parse_inspect_stage(std::string_view text);

struct InspectView {
  std::string title;                             // what was built, e.g. "smoke_mxfp4_dequant<kThreads=256> @ sm_90a"
  std::string buffer_name;                       // the PTX's name in diagnostics and diffs
  std::string input_ptx_file = "ptx.nvrtc.ptx";  // its name in the dump
};

// The per-pass report: each pass's status, summary and diff against the PTX before it.
std::string format_passes(const jit::BuildArtifacts& built, const InspectView& view);
std::string format_resources(const jit::BuildArtifacts& built);

void print_inspect(const jit::BuildArtifacts& built, const InspectView& view, InspectStage stage);

// Writes every stage to `dir` (created if missing): source.cu (when there is
// one), the input PTX, NN-<pass>.ptx and NN-<pass>.diff, final.ptx,
// resources.json and kernel.cubin. Returns how many files it wrote. `input`, the file the PTX was read from (if
// any), is never overwritten: a dump that would replace it throws UsageError before it writes anything.
int write_inspect_dump(const jit::BuildArtifacts& built, const InspectView& view, const std::filesystem::path& dir,
                       const std::optional<std::string>& input = std::nullopt);

}  // namespace moejit::tools
