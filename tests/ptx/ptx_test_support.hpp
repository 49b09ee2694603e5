#pragma once
// Shared by the PTX pass tests: real NVRTC output of the built-in kernels
// (compiled once per process), the hand-written fixtures, LLVM FileCheck,
// and helpers that make a test's own edits exact (an edit that does not
// match exactly once fails the test, as a pass would).

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "codegen/builtin_kernels.hpp"
#include "codegen/target.hpp"
#include "ptx_passes/pass.hpp"

namespace moejit::test {

// NVRTC's PTX for a spec (compiled once per process).
const std::string& nvrtc_ptx(const codegen::KernelSpec& spec);
// NVRTC's PTX for a built-in kernel ("smoke", "tma-probe", "mma-probe") on `target`.
const std::string& nvrtc_ptx(std::string_view kernel, codegen::Target target);

// The MoE operator's kernels as the launch plan has them for glm5.2 at B=8 on
// the target's built-in profile, per compute path the target has: compute,
// finalize, [dispatch,] the W1 transform; the first is the fast path's compute.
std::vector<codegen::KernelSpec> moe_specs(codegen::Target target);
// Every kernel moejit compiles, on every target it compiles for: the built-in
// kernels and the MoE kernels. The round trip and the validate checks run on all.
std::vector<codegen::KernelSpec> all_kernel_specs();

struct KernelOnTarget {
  const codegen::BuiltinKernel* kernel;
  codegen::Target target;
};
// Every built-in kernel on every target it compiles for.
std::vector<KernelOnTarget> kernels_on_targets();

codegen::Target sm90();
codegen::Target sm100();
codegen::Target sm120();

std::string fixture_path(std::string_view name);  // tests/ptx/fixtures/<name>
std::string read_fixture(std::string_view name);  // its bytes
std::vector<std::string> fixture_names();         // every *.ptx in tests/ptx/fixtures, sorted

struct FileCheckResult {
  bool ok = false;
  std::string diagnostics;  // FileCheck's messages when it fails
};
// Runs LLVM FileCheck (prefix CHECK) over `input` with the patterns in `checks`.
FileCheckResult filecheck(std::string_view input, std::string_view checks);

// `text` with its one occurrence of `from` replaced by `to`; throws unless
// `from` occurs exactly once.
std::string replace_once(std::string text, std::string_view from, std::string_view to);
// The full line (without its newline) holding the one occurrence of `needle`.
std::string line_with(const std::string& text, std::string_view needle);
// 1-based line number of the one occurrence of `needle`.
int line_of(const std::string& text, std::string_view needle);

// Runs `body`, which must throw ptx::PassError; returns it (fails the test otherwise).
ptx::PassError expect_pass_error(const std::function<void()>& body);

}  // namespace moejit::test
