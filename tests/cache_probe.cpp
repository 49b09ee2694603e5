// moejit_cache_probe: one process that asks the kernel cache for the smoke
// kernel, for the multi-process cache tests. It waits for a start file, so a
// test can release many probes at the same instant, and prints one JSON line:
// where the kernel came from, its key, the SHA-256 of the cubin it got, the
// counters and how many warnings it saw.
//
//   moejit_cache_probe --dir D [--target sm_90a] [--ready FILE --go FILE] [--fsize-limit BYTES]
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "cache/sha256.hpp"
#include "codegen/smoke_kernel.hpp"
#include "jit/kernel_cache.hpp"

using namespace moejit;

int main(int argc, char** argv) {
  std::string dir, target = "sm_90a", ready, go;
  long long fsize_limit = -1;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--dir"))
      dir = argv[i + 1];
    else if (!std::strcmp(argv[i], "--target"))
      target = argv[i + 1];
    else if (!std::strcmp(argv[i], "--ready"))
      ready = argv[i + 1];
    else if (!std::strcmp(argv[i], "--go"))
      go = argv[i + 1];
    else if (!std::strcmp(argv[i], "--fsize-limit"))
      fsize_limit = std::atoll(argv[i + 1]);
  }
  if (dir.empty()) {
    std::fprintf(stderr, "usage: moejit_cache_probe --dir D [--target T] [--ready F --go F] [--fsize-limit BYTES]\n");
    return 2;
  }
  if (fsize_limit >= 0) {
    // A disk that fills up mid-entry: writes past the limit fail with EFBIG.
    std::signal(SIGXFSZ, SIG_IGN);
    const rlimit limit{static_cast<rlim_t>(fsize_limit), static_cast<rlim_t>(fsize_limit)};
    setrlimit(RLIMIT_FSIZE, &limit);
  }
  // Toolchain probing (NVRTC) happens before the start line, so that the
  // processes really race on the cache and not on start-up.
  const codegen::KernelSpec spec = codegen::smoke_kernel_spec(*codegen::parse_target(target));
  const std::string expected_key = jit::cache_key(spec);
  if (!ready.empty()) std::fclose(std::fopen(ready.c_str(), "w"));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!go.empty() && access(go.c_str(), F_OK) != 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::microseconds(200));

  int warnings = 0;
  cache::Config config;
  config.dir = dir;
  config.warn = [&](const std::string& w) {
    ++warnings;
    std::fprintf(stderr, "moejit: warning: %s\n", w.c_str());
  };
  nlohmann::json out;
  {
    jit::KernelCache kc(config);
    cache::Source source;
    const auto k = kc.get_or_build(spec, &source);
    out = {{"pid", getpid()},
           {"source", cache::source_name(source)},
           {"key", k->key},
           {"key_matches", k->key == expected_key},
           {"cubin_sha256", cache::sha256_hex(std::string_view(k->cubin.data(), k->cubin.size()))},
           {"counters", kc.counters()},
           {"disk_writable", kc.store().disk_writable()}};
  }
  out["warnings"] = warnings;
  std::printf("%s\n", out.dump().c_str());
  return 0;
}
