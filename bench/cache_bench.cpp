// moejit_bench_cache: what the kernel cache costs on the CPU side.
//   cold compile   get_or_build on an empty cache (emit, NVRTC, passes, nvJitLink, publish)
//   disk hit       get_or_build in a fresh process-like cache on a populated directory
//                  (key, read, SHA-256 verify, parse meta.json)
//   memory hit     get_or_build of a kernel this cache already holds
// Prints a Markdown report (the format of bench/results/).
//
//   moejit_bench_cache [--cold N] [--disk N] [--memory N] [--commit SHA]
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "bench_common.hpp"
#include "codegen/device_profile.hpp"
#include "codegen/moe_config.hpp"
#include "codegen/moe_kernels.hpp"
#include "codegen/smoke_kernel.hpp"
#include "jit/kernel_cache.hpp"
#include "runtime/moe_layer.hpp"

using namespace moejit;
using Clock = std::chrono::steady_clock;

namespace {
struct Stats {
  double p50 = 0, max = 0, min = 0;
};

Stats stats_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return {v[v.size() / 2], v.back(), v.front()};
}

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

class ScratchDir {
 public:
  ScratchDir() {
    const char* base = std::getenv("TMPDIR");
    std::string pattern = std::string(base && *base ? base : "/tmp") + "/moejit-bench-XXXXXX";
    if (!::mkdtemp(pattern.data()))
      throw std::runtime_error(
          fmt::format("cannot make a scratch folder {} ($TMPDIR): {}", pattern, std::strerror(errno)));
    path_ = pattern;
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

cache::Config config_for(const std::string& dir) {
  cache::Config c;
  c.dir = dir;
  return c;
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown";
}

struct Cold {
  codegen::KernelSpec spec;
  Stats total, build;
  size_t cubin_bytes = 0;
};

Cold cold_compile(const codegen::KernelSpec& spec, int runs) {
  Cold r{spec, {}, {}, 0};
  std::vector<double> total, build;
  for (int i = 0; i < runs; ++i) {
    ScratchDir dir;
    jit::KernelCache kc(config_for(dir.path()));
    const auto t0 = Clock::now();
    const auto k = kc.get_or_build(spec);
    total.push_back(ms_since(t0));
    build.push_back(kc.counters().compile_millis);
    r.cubin_bytes = k->cubin.size();
  }
  r.total = stats_of(total);
  r.build = stats_of(build);
  return r;
}
}  // namespace

static int run(int argc, char** argv) {
  int cold_runs = 11, disk_runs = 201;
  long long memory_lookups = 1000000;
  std::string commit = "unknown";
  auto count = [](const std::string& flag, const char* text, int hi) {
    const int v = bench::parse_int(flag, text);
    if (v < 1 || v > hi)
      throw std::invalid_argument(fmt::format("{}: {} is outside the allowed range [1, {}]", flag, v, hi));
    return v;
  };
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      fmt::print(
          "usage: moejit_bench_cache [--cold N] [--disk N] [--memory N] [--commit SHA]\n"
          "What the kernel cache costs on the CPU (no GPU): cold compiles (N of them, default 11), disk hits\n"
          "(default 201) and memory hits (default 1000000), then every kernel of the built-in models over\n"
          "B = 1..256, in a scratch folder under $TMPDIR; prints a Markdown report.\n");
      return 0;
    } else if (a == "--cold" && i + 1 < argc) {
      cold_runs = count(a, argv[++i], 1000);
    } else if (a == "--disk" && i + 1 < argc) {
      disk_runs = count(a, argv[++i], 100000);
    } else if (a == "--memory" && i + 1 < argc) {
      memory_lookups = count(a, argv[++i], 1000000000);
    } else if (a == "--commit" && i + 1 < argc) {
      commit = argv[++i];
    } else {
      fmt::print(stderr, "moejit_bench_cache: unknown option or missing value: '{}' (moejit_bench_cache --help)\n", a);
      return 2;
    }
  }
  std::string command;
  for (int i = 0; i < argc; ++i) command += fmt::format("{}{}", i ? " " : "", argv[i]);

  // Warm-up: the NVRTC/nvJitLink libraries and the toolchain probe load once per process.
  {
    ScratchDir dir;
    jit::KernelCache(config_for(dir.path())).get_or_build(codegen::smoke_kernel_spec(codegen::Target{}));
  }

  // Every kernel codegen emits for the reference models over B = 1..256 (as
  // `moejit precompile` plans them, with the targets' device profiles), and the smoke kernel.
  std::vector<codegen::KernelSpec> all;
  for (const char* profile_name : {"h200", "rtx-pro-5000"}) {
    const codegen::DeviceProfile profile = codegen::builtin_profile(profile_name);
    all.push_back(codegen::smoke_kernel_spec(profile.target));
    for (const std::string& model : codegen::builtin_model_names())
      for (int b = 1; b <= 256; ++b)
        for (codegen::KernelSpec& s :
             codegen::moe_kernel_specs(codegen::builtin_model(model), b, profile, codegen::MoeCodegenOptions{}))
          if (std::find(all.begin(), all.end(), s) == all.end()) all.push_back(std::move(s));
  }
  std::vector<Cold> once;
  for (const codegen::KernelSpec& s : all) once.push_back(cold_compile(s, 1));
  const Cold& biggest = *std::max_element(once.begin(), once.end(),
                                          [](const Cold& a, const Cold& b) { return a.cubin_bytes < b.cubin_bytes; });
  const std::vector<Cold> cold = {cold_compile(codegen::smoke_kernel_spec(codegen::Target{}), cold_runs),
                                  cold_compile(biggest.spec, cold_runs)};
  const Cold& largest = cold[1];

  // Disk hit and memory hit on the largest kernel.
  ScratchDir populated;
  jit::KernelCache(config_for(populated.path())).get_or_build(largest.spec);
  std::vector<double> disk, key;
  for (int i = 0; i < disk_runs; ++i) {
    jit::KernelCache kc(config_for(populated.path()));
    cache::Source source;
    const auto t0 = Clock::now();
    kc.get_or_build(largest.spec, &source);
    disk.push_back(ms_since(t0));
    if (source != cache::Source::disk) throw std::runtime_error("expected a disk hit");
    const auto t1 = Clock::now();
    const std::string k = jit::cache_key(largest.spec);
    key.push_back(ms_since(t1));
  }
  jit::KernelCache warm(config_for(populated.path()));
  warm.get_or_build(largest.spec);
  std::vector<double> memory_ns;
  for (int round = 0; round < 5; ++round) {
    const auto t0 = Clock::now();
    for (long long i = 0; i < memory_lookups; ++i) {
      const auto k = warm.get_or_build(largest.spec);
      if (!k) std::abort();
    }
    memory_ns.push_back(ms_since(t0) * 1e6 / double(memory_lookups));
  }

  char host[256] = {};
  gethostname(host, sizeof host - 1);
  const auto now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", std::gmtime(&now));

  fmt::print("# Kernel cache, CPU side\n\n");
  fmt::print("- date: {}\n- commit: {}\n", date, commit);
  fmt::print("- machine: {} ({} cores, {}), no GPU\n", host, sysconf(_SC_NPROCESSORS_ONLN), cpu_model());
  fmt::print("- command: `{}`\n", command);
  fmt::print("- cache dir: a fresh directory under $TMPDIR or /tmp, on the machine's local disk\n\n");
  fmt::print("## Cold compile ({} runs each, empty cache each run, after one warm-up compile)\n\n", cold_runs);
  fmt::print(
      "`get_or_build` = key + emit + NVRTC + passes + nvJitLink + publish (fsync'd); build = the build_kernel "
      "part.\n\n");
  fmt::print("| kernel | cubin | get_or_build p50 | max | build p50 | max |\n|---|---:|---:|---:|---:|---:|\n");
  for (const Cold& c : cold)
    fmt::print("| {} | {} B | {:.1f} ms | {:.1f} ms | {:.1f} ms | {:.1f} ms |\n", c.spec.summary(), c.cubin_bytes,
               c.total.p50, c.total.max, c.build.p50, c.build.max);
  fmt::print(
      "\nThe second row is the largest kernel codegen emits (by cubin size) among the {} distinct kernels of\n"
      "glm5.2 and dsv4.1-flash over B = 1..256 on sm_90a and sm_120a, plus the smoke kernels.\n\n",
      all.size());
  fmt::print("## One cold compile of each of those {} kernels\n\n", all.size());
  fmt::print("| kernel | cubin | get_or_build | build |\n|---|---:|---:|---:|\n");
  std::vector<double> all_ms;
  for (const Cold& c : once) {
    fmt::print("| {} | {} B | {:.1f} ms | {:.1f} ms |\n", c.spec.summary(), c.cubin_bytes, c.total.p50, c.build.p50);
    all_ms.push_back(c.total.p50);
  }
  const Stats a = stats_of(all_ms);
  fmt::print("\nOver all {}: p50 {:.1f} ms, max {:.1f} ms per kernel.\n\n", all.size(), a.p50, a.max);
  fmt::print("## Hits on {}\n\n", largest.spec.summary());
  fmt::print("| lookup | runs | p50 | max | min |\n|---|---:|---:|---:|---:|\n");
  const Stats d = stats_of(disk), k = stats_of(key), m = stats_of(memory_ns);
  fmt::print(
      "| disk hit (new cache object: key, read 5 files, SHA-256 verify, parse) | {} | {:.3f} ms | {:.3f} ms | {:.3f} "
      "ms |\n",
      disk_runs, d.p50, d.max, d.min);
  fmt::print(
      "| of which: key computation (identity, spec JSON, templates, SHA-256) | {} | {:.3f} ms | {:.3f} ms | {:.3f} ms "
      "|\n",
      disk_runs, k.p50, k.max, k.min);
  fmt::print("| memory hit (one hash-map lookup keyed by the spec) | 5 x {} | {:.0f} ns | {:.0f} ns | {:.0f} ns |\n",
             memory_lookups, m.p50, m.max, m.min);
  return 0;
}

int main(int argc, char** argv) {
  return bench::guarded_main("moejit_bench_cache", argc, argv, run);
}
