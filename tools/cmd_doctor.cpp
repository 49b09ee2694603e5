// moejit doctor: what this machine offers moejit. Exits 0 without a GPU: a
// machine that only precompiles is a supported machine. Exits 1 when the
// kernel cache directory cannot be used, or the cache's environment does not parse: then nothing moejit
// compiles is kept, or nothing runs.
#include <fmt/format.h>

#include "cache/cache_dir.hpp"
#include "cache/config.hpp"
#include "codegen/compiler_identity.hpp"
#include "codegen/nvjitlink_linker.hpp"
#include "codegen/smoke_kernel.hpp"
#include "jit/kernel_builder.hpp"
#include "runtime/device.hpp"
#include "tools/cache_config.hpp"
#include "tools/cli_args.hpp"
#include "tools/commands.hpp"

namespace moejit::tools {

int cmd_doctor(int argc, char** argv) {
  const std::vector<OptionSpec> options = {{"help", false, "this text"}};
  Args args(options, argc, argv, 2);
  if (args.has("help")) {
    fmt::print(
        "usage: moejit doctor\n\nReports the toolchain, the targets it can build, the CUDA driver,\n"
        "the GPUs and the kernel cache directory.\n\noptions:\n{}",
        format_options(options));
    return 0;
  }
  args.no_positional();
  const auto& tc = codegen::toolchain_version();
  fmt::print("moejit      {}\n", MOEJIT_VERSION);
  fmt::print("NVRTC       {}.{} ({}, {})\n", tc.nvrtc_major, tc.nvrtc_minor, tc.nvrtc_release, tc.nvrtc_build);
  fmt::print("nvJitLink   {}.{} ({})\n", tc.nvjitlink_major, tc.nvjitlink_minor, tc.nvjitlink_release);

  std::string targets;
  for (codegen::Target t : codegen::all_targets()) {
    std::string status = "ok";
    try {
      jit::build_kernel(codegen::smoke_kernel_spec(t));
    } catch (const std::exception& e) {
      status = fmt::format("cannot build ({})", e.what());
    }
    targets += fmt::format("{}{} {}", targets.empty() ? "" : ", ", t.name(), status);
  }
  fmt::print("targets     {}\n", targets);
  std::string no_dir;
  const std::string cache_dir = cache::default_cache_dir(&no_dir);
  bool cache_usable = false;
  if (cache_dir.empty()) {
    fmt::print("cache dir   none: {}; set MOEJIT_CACHE_DIR\n", no_dir);
  } else {
    const CacheDirCheck check = check_cache_dir(cache_dir);
    cache_usable = check.usable;
    fmt::print("cache dir   {} ({}{})\n", cache_dir, check.usable ? "" : "PROBLEM: ", check.status);
    for (const std::string& w : check.warnings) fmt::print("            warning: {}\n", w);
  }
  // The variables every other command reads before it compiles: one that does not parse stops them all.
  try {
    cache::Config::from_env();
  } catch (const std::exception& e) {
    fmt::print("cache env   PROBLEM: {}\n", e.what());
    cache_usable = false;
  }
  const int status = cache_usable ? 0 : 1;

  std::string why;
  const runtime::DriverApi* api = runtime::try_driver(&why);
  if (!api) {
    fmt::print("driver      no CUDA driver found ({})\n", why);
    fmt::print("GPUs        none: moejit can plan, compile and precompile here; launches need a GPU\n");
    return status;
  }
  fmt::print("driver      CUDA {}.{}\n", api->driver_version / 1000, (api->driver_version % 1000) / 10);
  const int n = runtime::device_count();
  if (n == 0) fmt::print("GPUs        none visible\n");
  for (int i = 0; i < n; ++i) {
    const runtime::DeviceInfo d = runtime::query_device(i);
    fmt::print(
        "GPU {}       {} (sm_{}{}, target {}), {} SMs, {} KiB SMEM/SM, {} KiB/block, {} regs/SM, "
        "{} MiB L2, {:.1f} GiB\n",
        i, d.name, d.cc_major, d.cc_minor, d.target_name().empty() ? "unsupported" : d.target_name(), d.sm_count,
        d.smem_per_sm / 1024, d.smem_per_block_optin / 1024, d.regs_per_sm, d.l2_bytes / (1024 * 1024),
        double(d.total_memory) / (1u << 30));
  }
  return status;
}

}  // namespace moejit::tools
