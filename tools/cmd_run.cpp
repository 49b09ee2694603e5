// moejit run: the main job on a built-in configuration. Plans and compiles
// what the configuration needs for the target and, where a GPU exists, runs
// it and checks it against the CPU reference.
#include <fmt/format.h>

#include <random>

#include "codegen/smoke_kernel.hpp"
#include "runtime/device.hpp"
#include "runtime/kernel_builder.hpp"
#include "runtime/loaded_kernel.hpp"
#include "runtime/smoke_check.hpp"
#include "tools/cli_args.hpp"
#include "tools/commands.hpp"

namespace moejit::tools {

int cmd_run(int argc, char** argv) {
  const std::vector<OptionSpec> options = {
      {"target", true, "target to compile for (default: the GPU's, else sm_90a); one of sm_90a, sm_100a, sm_120a", "T"},
      {"blocks", true, "MXFP4 blocks of 32 elements for the smoke check (default 1048576)", "N"},
      {"seed", true, "random seed for the inputs (default: fresh each run)", "S"},
      {"help", false, "this text"},
  };
  Args args(options, argc, argv, 2);
  if (args.has("help")) {
    fmt::print(
        "usage: moejit run [options]\n\n"
        "Compiles the smoke kernel (MXFP4 -> BF16 dequantization) through the whole JIT\n"
        "pipeline and, where a GPU exists, launches it on random input and checks every\n"
        "element against the CPU reference. Without a GPU the launch is skipped.\n\noptions:\n{}",
        format_options(options));
    return 0;
  }
  const auto blocks = static_cast<std::uint32_t>(args.get_int("blocks", 1 << 20, 1, 1 << 26));
  const std::uint64_t seed =
      args.has("seed") ? static_cast<std::uint64_t>(args.get_int("seed", 0, 0, INT64_MAX)) : std::random_device{}();

  std::string why;
  const bool have_gpu = runtime::try_driver(&why) && runtime::device_count() > 0;
  std::optional<runtime::DeviceInfo> device;
  if (have_gpu) device = runtime::query_device(0);

  codegen::Target target{codegen::Arch::sm_90a};
  if (auto t = args.get("target")) {
    auto parsed = codegen::parse_target(*t);
    if (!parsed) throw UsageError(fmt::format("--target: '{}' is not one of {}", *t, codegen::target_names()));
    target = *parsed;
  } else if (device && !device->target_name().empty()) {
    target = *codegen::parse_target(device->target_name());
  }

  const codegen::KernelSpec spec = codegen::smoke_kernel_spec(target);
  fmt::print("[1/2] compile {}\n", spec.summary());
  const runtime::BuildArtifacts built = runtime::build_kernel(spec);
  const codegen::KernelResources* res = built.resources.find(spec.entry_name());
  fmt::print("      NVRTC {:.1f} ms, nvJitLink {:.1f} ms, cubin {} bytes", built.nvrtc_millis, built.link_millis,
             built.cubin.size());
  if (res)
    fmt::print(", {} registers, {} B spill stores, {} B smem\n", res->registers, res->spill_store_bytes,
               res->shared_bytes);
  else
    fmt::print("\n      nvJitLink reported no resources for {}; its log:\n{}\n", spec.entry_name(), built.link_log);

  if (!have_gpu) {
    fmt::print("[2/2] launch skipped: {}\n", why.empty() ? "no GPU visible" : "no CUDA driver found (" + why + ")");
    return 0;
  }
  if (device->target_name() != std::string(target.name())) {
    fmt::print("[2/2] launch skipped: GPU 0 is {} ({}), the kernel was built for {}\n", device->name,
               device->target_name(), target.name());
    return 0;
  }
  runtime::ScopedContext ctx(0);
  runtime::LoadedKernel kernel(built.cubin, spec.entry_name());
  const runtime::SmokeCheckResult r = runtime::run_smoke_check(kernel, blocks, seed);
  fmt::print("[2/2] launch on {}: {} elements, seed {}, {:.3f} ms, {} mismatches ({} unwritten)\n", device->name,
             r.elements, seed, r.millis, r.mismatches, r.unwritten);
  if (r.mismatches) {
    fmt::print(stderr, "FAILED: {}\n", r.first_mismatch);
    return 1;
  }
  fmt::print("result: PASS, every element matches the CPU reference bit for bit\n");
  return 0;
}

}  // namespace moejit::tools
