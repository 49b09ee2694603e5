// moejit inspect: show what the JIT pipeline does to one kernel: the emitted
// source, the NVRTC PTX, a unified diff per PTX pass, the final PTX and the
// nvJitLink resource report. Works on a built-in kernel (--kernel) or on a
// PTX file from any frontend (--ptx), whose pass options come from the
// command line. A kernel source (a model configuration, later) only needs to
// produce a KernelSpec and call inspect_spec().
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>

#include "codegen/builtin_kernels.hpp"
#include "codegen/moe_kernels.hpp"
#include "jit/kernel_builder.hpp"
#include "jit/precompile.hpp"
#include "tools/cli_args.hpp"
#include "tools/codegen_flags.hpp"
#include "tools/commands.hpp"
#include "tools/inspect_report.hpp"

namespace moejit::tools {
namespace {
const std::vector<OptionSpec>& inspect_options() {
  static const std::vector<OptionSpec> options = [] {
    std::vector<OptionSpec> o = {
        {"kernel", true, "a built-in kernel: " + codegen::builtin_kernel_names(), "NAME"},
        {"model", true,
         "an MoE layer's kernel: a built-in model, glm5.2, dsv4.1-flash, gpt-oss-120b or gpt-oss-20b (with --batch and "
         "--role)",
         "M"},
        {"batch", true, "with --model: the forward's tokens B (default 8)", "B"},
        {"ranks", true, "with --model: expert-parallel ranks R, 1..32 (default 1): rank 0 of R, E / R experts", "R"},
        {"role", true, "with --model: dispatch, compute (default), finalize, transform (W1) or transform-w2", "R"},
        shared_expert_option(),
        {"ptx", true, "a PTX file (from any frontend) instead of a built-in kernel", "FILE"},
        {"target", true, "the target: " + codegen::target_names() + " (required)", "T"},
        {"stage", true, "what to print: source, ptx, passes (default), final, resources, all", "S"},
        {"dump-dir", true, "also write every stage to files in DIR", "DIR"},
        {"maxnreg", true, "occupancy: pin .maxnreg to N registers", "N"},
        {"minnctapersm", true, "occupancy: rewrite .minnctapersm to N", "N"},
        {"version-cap", true, "version: cap .version at X.Y (default: what the loaded nvJitLink reads)", "X.Y"},
        {"version-toolchain", true, "version: apply the cap only to PTX from toolchain release R (e.g. 13.2)", "R"},
        {"tensormap", true, "--ptx: make formal NAME a by-value TensorMap read by USES instructions (default 1)",
         "NAME[:USES]", true},
        {"require", true, "--ptx: validate that an instruction with this opcode prefix is present", "OPCODE", true},
        {"entry", true, "--ptx: the entry the options apply to (default: the module's only entry)", "NAME"},
        {"help", false, "this text"},
    };
    for (OptionSpec& c : codegen_option_specs()) o.push_back(std::move(c));
    return o;
  }();
  return options;
}

// --model/--batch/--role: the spec a layer of that model would load, as the
// launch plan plans it on the target's built-in device profile.
codegen::KernelSpec moe_spec(const Args& args, codegen::Target target) {
  codegen::MoeConfig config = builtin_model_flag(args, *args.get("model"));
  config.ranks = static_cast<int>(args.get_int("ranks", 1, 1, 32));
  validate_with_ranks(args, config);
  const int batch = static_cast<int>(args.get_int("batch", 8, 1, config.token_capacity));
  codegen::MoeCodegenOptions options = codegen_options(args);
  apply_recipe(args, config, options);
  codegen::DeviceProfile profile;
  try {
    profile = jit::profile_for(target);
  } catch (const codegen::ConfigError& e) {
    throw UsageError(fmt::format("--target: {}", e.what()));
  }
  const std::string role = args.get_or("role", "compute");
  if (role == "transform" || role == "transform-w2") {
    const codegen::ComputePath path = codegen::resolve_path(options.path, target.arch, config.recipe);
    const codegen::AtomTraits* atom = codegen::find_atom(target, path, config.recipe);
    if (!atom) throw UsageError(fmt::format("--path: {} has no {} path", target.name(), codegen::path_name(path)));
    return codegen::moe_weight_transform_spec(config, *atom, target,
                                              role == "transform" ? codegen::Projection::w1 : codegen::Projection::w2);
  }
  const codegen::MoeLaunchPlan plan = codegen::plan_launch(config, batch, profile, options);
  if (role == "compute") return codegen::moe_compute_spec(config, plan);
  if (role == "finalize") return codegen::moe_finalize_spec(config, plan);
  if (role == "dispatch") {
    if (auto spec = codegen::moe_dispatch_spec(config, plan)) return *spec;
    throw UsageError(
        fmt::format("--role dispatch: this plan launches no dispatch role (the {} path reads the "
                    "caller's MXFP8 x; add --input-bf16 or --path exact)",
                    codegen::path_name(*plan.options.path)));
  }
  throw UsageError(
      fmt::format("--role: '{}' is not one of dispatch, compute, finalize, transform, transform-w2", role));
}

codegen::Target target_of(const Args& args) {
  const auto text = args.get("target");
  if (!text) throw UsageError("--target is required (one of " + codegen::target_names() + ")");
  const auto target = codegen::parse_target(*text);
  if (!target)
    throw UsageError(fmt::format("--target: '{}' is not one of {}", excerpt(*text), codegen::target_names()));
  return *target;
}

void apply_version_options(const Args& args, ptx::PipelineOptions& options) {
  if (auto cap = args.get("version-cap")) {
    options.version.cap = ptx::PtxVersion::parse(*cap);
    if (!options.version.cap) throw UsageError(fmt::format("--version-cap: '{}' is not MAJOR.MINOR", excerpt(*cap)));
  }
  if (auto release = args.get("version-toolchain")) options.version.only_for_release = *release;
}

// nvJitLink's time grows faster than linearly with the length of one line
// (CUDA 13.0 on the build machine: a 1 MiB line 0.2 s, 4 MiB 2.7 s; issue 15
// saw 20 MB run over 300 s), inside the library, where it cannot be
// interrupted. NVRTC's PTX stays far below (its longest lines are
// initializers), so a line over the bound is refused before nvJitLink sees it.
constexpr size_t k_max_ptx_line = 1 << 20;
constexpr size_t k_max_ptx_bytes = size_t(64) << 20;

std::string read_ptx_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;  // before excerpt() allocates
    throw UsageError(fmt::format("--ptx: cannot read '{}': {}", excerpt(path), std::strerror(err)));
  }
  std::string text;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {  // a folder (EISDIR) or an I/O error, not an empty file
      const int err = errno;
      ::close(fd);
      throw UsageError(fmt::format("--ptx: cannot read '{}': {}", excerpt(path), std::strerror(err)));
    }
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
    if (text.size() > k_max_ptx_bytes) {
      ::close(fd);
      throw std::runtime_error(fmt::format("--ptx {}: larger than {} MiB; a PTX module that large is not inspected",
                                           path, k_max_ptx_bytes >> 20));
    }
  }
  ::close(fd);
  size_t line = 1;
  for (size_t start = 0; start < text.size(); ++line) {
    const size_t end = std::min(text.find('\n', start), text.size());
    if (end - start > k_max_ptx_line)
      throw std::runtime_error(fmt::format(
          "--ptx {}: line {} is {} bytes, over the limit of {} (nvJitLink's time grows faster than linearly with the "
          "length of a line); break it into shorter lines",
          path, line, end - start, k_max_ptx_line));
    start = end + 1;
  }
  return text;
}

// Pass options for a PTX file: only what the command line asks for, plus a
// validate rule that the entry exists (and its required instructions).
ptx::PipelineOptions file_options(const Args& args, codegen::Target target) {
  ptx::PipelineOptions o;
  o.version = jit::default_version_policy();
  const std::string entry = args.get_or("entry", "");
  const int maxnreg = static_cast<int>(args.get_int("maxnreg", 0, 1, 255));
  const int minctas = static_cast<int>(args.get_int("minnctapersm", 0, 1, 64));
  if (maxnreg || minctas) o.occupancy.push_back({entry, 0, minctas, maxnreg});
  for (const std::string& spec : args.get_all("tensormap")) {
    const size_t colon = spec.rfind(':');
    ptx::TensorMapFormal map{entry, spec.substr(0, colon), 1};
    if (colon != std::string::npos) {
      const std::string uses = spec.substr(colon + 1);
      if (uses.empty() || uses.find_first_not_of("0123456789") != std::string::npos || uses.size() > 4)
        throw UsageError(fmt::format("--tensormap: '{}' is not NAME[:USES]", excerpt(spec)));
      map.uses = std::stoi(uses);
      if (map.uses < 1)
        throw UsageError(fmt::format("--tensormap: '{}': USES = {} is outside the allowed range [1, 9999]",
                                     excerpt(spec), map.uses));
    }
    if (map.formal.empty()) throw UsageError(fmt::format("--tensormap: '{}' names no formal", excerpt(spec)));
    // A second rewrite of the same formal failed in the pass, blaming the module for the option's repeat.
    for (const ptx::TensorMapFormal& seen : o.tensormaps)
      if (seen.formal == map.formal)
        throw UsageError(fmt::format("--tensormap: formal '{}' is given twice", excerpt(map.formal)));
    o.tensormaps.push_back(std::move(map));
  }
  ptx::EntryAbi abi;
  abi.entry = entry;
  abi.target = std::string(target.name());
  abi.required_instructions = args.get_all("require");
  if (!o.tensormaps.empty()) abi.required_instructions.push_back("cp.async.bulk.tensor");
  o.abi = {std::move(abi)};
  apply_version_options(args, o);
  return o;
}

InspectStage stage_of(const Args& args) {
  const std::string text = args.get_or("stage", "passes");
  const auto stage = parse_inspect_stage(text);
  if (!stage)
    throw UsageError(
        fmt::format("--stage: '{}' is not one of source, ptx, passes, final, resources, all", excerpt(text)));
  return *stage;
}

// Runs the passes and nvJitLink on `built.ptx` and shows the result. When a
// stage fails, what came before it is still printed (and dumped), then the
// error propagates: that is when a user most needs to see the diffs.
int passes_and_show(jit::BuildArtifacts built, const InspectView& view, const ptx::PipelineOptions& options,
                    const Args& args) {
  const InspectStage stage = stage_of(args);
  auto show = [&] {
    print_inspect(built, view, stage);
    if (auto dir = args.get("dump-dir")) {
      const int files = write_inspect_dump(built, view, *dir, args.get("ptx"));
      fmt::print("\ndumped {} files to {}\n", files, *dir);
    }
    std::fflush(stdout);
  };
  try {
    jit::run_passes(built, view.buffer_name, options);
    jit::link(built, view.buffer_name);
  } catch (const std::exception&) {
    show();
    throw;
  }
  show();
  return 0;
}

// A KernelSpec's build, with the occupancy and version options of the command line.
int inspect_spec(codegen::KernelSpec spec, const Args& args) {
  stage_of(args);  // a usage error before the compile, not after it
  spec.max_registers = static_cast<int>(args.get_int("maxnreg", spec.max_registers, 1, 255));
  spec.target_blocks_per_sm = static_cast<int>(args.get_int("minnctapersm", spec.target_blocks_per_sm, 1, 64));
  ptx::PipelineOptions options = jit::pass_options(spec);
  apply_version_options(args, options);
  return passes_and_show(jit::compile_source(spec), InspectView{spec.summary(), jit::ptx_buffer_name(spec)}, options,
                         args);
}
}  // namespace

int cmd_inspect(int argc, char** argv) {
  const Args args(inspect_options(), argc, argv, 2);
  if (args.has("help")) {
    fmt::print(
        "usage: moejit inspect --kernel NAME --target T [options]\n"
        "       moejit inspect --model M --batch B --role R --target T [--path P] [--input-bf16] [options]\n"
        "       moejit inspect --ptx FILE --target T [options]\n\n"
        "Builds one kernel through the JIT pipeline and shows each stage: the emitted\n"
        "source, the NVRTC PTX, a unified diff per PTX pass (version, occupancy,\n"
        "tensormap-by-value, validate), the final PTX and the nvJitLink resource report.\n"
        "A built-in kernel brings its own pass options; for a PTX file they come from\n"
        "the options below. A pass whose rewrite does not match exactly as stated fails\n"
        "with its name, the expected and found counts and file:line:col.\n\noptions:\n{}",
        format_options(inspect_options()));
    return 0;
  }
  args.no_positional();
  if (int(args.has("kernel")) + int(args.has("ptx")) + int(args.has("model")) != 1)
    throw UsageError("give exactly one of --kernel NAME, --model M (with --batch, --role) or --ptx FILE");
  const codegen::Target target = target_of(args);
  // An option of another mode is refused, not ignored: `--model ... --require OPCODE` checked nothing.
  if (!args.has("ptx"))
    for (const char* only_ptx : {"tensormap", "require", "entry"})
      if (args.has(only_ptx))
        throw UsageError(fmt::format("--{} is for --ptx: a built-in kernel declares its own", only_ptx));
  if (!args.has("model")) {
    std::vector<std::string> only_model = {"batch", "role", "shared-expert", "ranks"};
    for (const OptionSpec& c : codegen_option_specs()) only_model.push_back(c.name);
    for (const std::string& name : only_model)
      if (args.has(name)) throw UsageError(fmt::format("--{} is for --model", name));
  }
  // Every option is read before --dump-dir is made: a refusal leaves no folder behind.
  std::optional<codegen::KernelSpec> spec;
  std::optional<ptx::PipelineOptions> options;
  if (args.has("model")) {
    spec = moe_spec(args, target);
  } else if (auto name = args.get("kernel")) {
    const codegen::BuiltinKernel* kernel = codegen::find_builtin_kernel(*name);
    if (!kernel)
      throw UsageError(fmt::format("--kernel: '{}' is not one of {}", excerpt(*name), codegen::builtin_kernel_names()));
    if (!kernel->supports(target))
      throw UsageError(fmt::format("--kernel: '{}' does not compile for {}", *name, target.name()));
    spec = kernel->spec(target);
  } else {
    options = file_options(args, target);
  }
  if (auto dir = args.get("dump-dir")) {  // a folder that cannot be made is named before the compile, not after
    std::error_code ec;
    std::filesystem::create_directories(*dir, ec);
    if (ec || !std::filesystem::is_directory(*dir))
      throw UsageError(fmt::format("--dump-dir: cannot use '{}' as a folder: {}", excerpt(*dir),
                                   ec ? ec.message() : "it is not a directory"));
  }
  if (spec) return inspect_spec(*spec, args);
  const std::string path = *args.get("ptx");
  jit::BuildArtifacts built;
  built.spec.target = target;
  built.ptx = read_ptx_file(path);
  const InspectView view{fmt::format("{} @ {}", path, target.name()), std::filesystem::path(path).filename().string(),
                         "ptx.input.ptx"};
  return passes_and_show(std::move(built), view, *options, args);
}

}  // namespace moejit::tools
