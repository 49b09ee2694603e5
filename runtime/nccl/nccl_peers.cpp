#include "runtime/nccl/nccl_peers.hpp"

#include <dlfcn.h>
#include <fmt/format.h>

#include <memory>
#include <mutex>
#include <stdexcept>
#include <vector>

#include "runtime/ep_ranks.hpp"
#include "runtime/loaded_kernel.hpp"

namespace moejit::runtime {
namespace {
struct Loaded {
  NcclApi api;
  std::string why;
  bool ok = false;
};

Loaded load() {
  Loaded l;
  void* lib = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* err = dlerror();
    l.why = fmt::format("cannot load libnccl.so.2 ({})", err ? err : "unknown error");
    return l;
  }
#define MOEJIT_NCCL_RESOLVE(name)                                                         \
  l.api.name = reinterpret_cast<decltype(l.api.name)>(dlsym(lib, #name));                 \
  if (!l.api.name) {                                                                      \
    l.why = "libnccl.so.2 has no " #name " (moejit needs NCCL's window and device APIs)"; \
    return l;                                                                             \
  }
  MOEJIT_NCCL_FUNCTIONS(MOEJIT_NCCL_RESOLVE)
#undef MOEJIT_NCCL_RESOLVE
  if (l.api.ncclGetVersion(&l.api.version) != ncclSuccess) {
    l.why = "libnccl.so.2: ncclGetVersion failed";
    return l;
  }
  if (l.api.version / 100 != k_nccl_built_version / 100) {
    l.why = fmt::format(
        "libnccl.so.2 is NCCL {}.{}.{}; moejit's peer-table kernel reads the window layout of NCCL {}.{} (the "
        "headers it was built with)",
        l.api.version / 10000, l.api.version / 100 % 100, l.api.version % 100, k_nccl_built_version / 10000,
        k_nccl_built_version / 100 % 100);
    return l;
  }
  l.ok = true;
  return l;
}
}  // namespace

const NcclApi* try_nccl(std::string* why) {
  static const Loaded loaded = load();
  if (!loaded.ok && why) *why = loaded.why;
  return loaded.ok ? &loaded.api : nullptr;
}

void fill_peer_table(std::string_view target, ncclWindow_t window, int peers, CUdeviceptr table, CUstream stream) {
  const std::span<const std::uint8_t> cubin = peer_table_cubin(target);
  if (cubin.empty())
    throw std::invalid_argument(
        fmt::format("fill_peer_table: no peer-table kernel for {} (built for sm_90a, sm_100a, sm_120a)", target));
  if (peers < 1 || peers > 1024)
    throw std::invalid_argument(fmt::format("fill_peer_table: peers = {} is outside [1, 1024]", peers));
  // One library per target for the process (context-independent, like every JIT kernel).
  static std::mutex mutex;
  static std::vector<std::pair<std::string, std::unique_ptr<LoadedKernel>>> loaded;
  const LoadedKernel* kernel = nullptr;
  {
    std::lock_guard lock(mutex);
    for (const auto& [t, k] : loaded)
      if (t == target) kernel = k.get();
    if (!kernel) {
      loaded.emplace_back(std::string(target), std::make_unique<LoadedKernel>(
                                                   std::vector<char>(cubin.begin(), cubin.end()), k_peer_table_entry));
      kernel = loaded.back().second.get();
    }
  }
  void* args[] = {&window, &peers, &table};
  kernel->launch({1, 32, 0}, stream, args);
}

void init_rank_workspace_nccl(std::string_view target, ncclWindow_t window, CUdeviceptr ws, std::int64_t bytes,
                              int rank, int ranks, std::chrono::nanoseconds timeout, CUstream stream) {
  init_rank_header(ws, bytes, rank, ranks, timeout, stream);
  fill_peer_table(target, window, ranks, ws + k_peer_table_offset, stream);
  MOEJIT_CU(cuStreamSynchronize, stream);
}

}  // namespace moejit::runtime
