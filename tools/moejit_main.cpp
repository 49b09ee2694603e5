// moejit: plan, compile, inspect and run fused MoE kernels.
#include <fmt/format.h>

#include <cstring>
#include <exception>
#include <nlohmann/json.hpp>

#include "cache/printable.hpp"
#include "codegen/compiler_identity.hpp"
#include "tools/cli_args.hpp"
#include "tools/commands.hpp"

namespace {
void print_help() {
  fmt::print(
      "moejit {} - a JIT kernel compiler and runtime for fused Mixture-of-Experts layers\n\n"
      "usage: moejit <command> [options]     (moejit <command> --help for its options)\n\n"
      "commands:\n",
      MOEJIT_VERSION);
  for (const auto& c : moejit::tools::k_commands) fmt::print("  {:<12} {}\n", c.name, c.summary);
  fmt::print(
      "\nglobal options:\n"
      "  --help       this text\n"
      "  --version    the moejit version and the compiler identity that keys the kernel cache\n"
      "\nenvironment:\n"
      "  MOEJIT_CACHE_DIR        kernel cache location (default $XDG_CACHE_HOME/moejit or ~/.cache/moejit)\n"
      "  MOEJIT_CACHE_MAX_BYTES  kernel cache size cap, e.g. 2G (default 1G; 0 = no cap); LRU eviction\n"
      "  MOEJIT_NO_JIT=1         strict mode: a kernel missing from the cache is an error, never a compile\n");
}

void print_version() {
  const auto& tc = moejit::codegen::toolchain_version();
  fmt::print("moejit {}\n", MOEJIT_VERSION);
  fmt::print("NVRTC {}.{} ({}, {})\n", tc.nvrtc_major, tc.nvrtc_minor, tc.nvrtc_release, tc.nvrtc_build);
  fmt::print("nvJitLink {}.{} ({})\n", tc.nvjitlink_major, tc.nvjitlink_minor, tc.nvjitlink_release);
  fmt::print("identity {}\n", nlohmann::json(tc).dump());
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h") || !std::strcmp(argv[1], "help")) {
    print_help();
    return argc < 2 ? 2 : 0;
  }
  if (!std::strcmp(argv[1], "--version")) {
    try {
      print_version();
      return 0;
    } catch (const std::exception& e) {
      fmt::print(stderr, "moejit: error: {}\n", e.what());
      return 1;
    }
  }
  for (const auto& c : moejit::tools::k_commands) {
    if (std::strcmp(argv[1], c.name) != 0) continue;
    try {
      return c.run(argc, argv);
    } catch (const moejit::tools::UsageError& e) {
      fmt::print(stderr, "moejit {}: {}\n", c.name, moejit::cache::printable_message(e.what()));
      return 2;
    } catch (const std::exception& e) {
      // Whatever an error quotes, the terminal gets no control bytes and at most 16 KiB.
      fmt::print(stderr, "moejit {}: error: {}\n", c.name, moejit::cache::printable_message(e.what()));
      return 1;
    }
  }
  fmt::print(stderr, "moejit: unknown command '{}' (see moejit --help)\n", moejit::tools::excerpt(argv[1]));
  return 2;
}
