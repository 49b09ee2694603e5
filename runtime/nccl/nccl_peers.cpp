#include "runtime/nccl/nccl_peers.hpp"

#include <dlfcn.h>
#include <fmt/format.h>

#include <cstdlib>
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

Loaded load(const std::string& path) {
  Loaded l;
  void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* err = dlerror();
    l.why = fmt::format("cannot load {} ({})", path, err ? err : "unknown error");
    return l;
  }
#define MOEJIT_NCCL_RESOLVE(name)                                                                          \
  l.api.name = reinterpret_cast<decltype(l.api.name)>(dlsym(lib, #name));                                  \
  if (!l.api.name) {                                                                                       \
    l.why = fmt::format("{} has no " #name " (moejit needs NCCL 2.27 or later: symmetric windows)", path); \
    return l;                                                                                              \
  }
  MOEJIT_NCCL_FUNCTIONS(MOEJIT_NCCL_RESOLVE)
#undef MOEJIT_NCCL_RESOLVE
  l.api.ncclAlltoAll = reinterpret_cast<decltype(l.api.ncclAlltoAll)>(dlsym(lib, "ncclAlltoAll"));  // optional
  if (l.api.ncclGetVersion(&l.api.version) != ncclSuccess) {
    l.why = path + ": ncclGetVersion failed";
    return l;
  }
  if (l.api.version < 22700) {
    l.why = fmt::format("{} is NCCL {}.{}.{}; moejit needs 2.27 or later (symmetric windows)", path,
                        l.api.version / 10000, l.api.version / 100 % 100, l.api.version % 100);
    return l;
  }
  l.api.lsa_windows = l.api.version / 100 == k_nccl_built_version / 100;
  l.ok = true;
  return l;
}
}  // namespace

std::string nccl_library() {
  const char* env = std::getenv(k_nccl_library_env);
  return env && *env ? env : "libnccl.so.2";
}

const NcclApi* try_nccl_at(const std::string& path, std::string* why) {
  // One load per path for the process: the library stays loaded.
  static std::mutex mutex;
  static std::vector<std::pair<std::string, std::unique_ptr<Loaded>>> loaded;
  std::lock_guard lock(mutex);
  const Loaded* l = nullptr;
  for (const auto& [p, entry] : loaded)
    if (p == path) l = entry.get();
  if (!l) l = loaded.emplace_back(path, std::make_unique<Loaded>(load(path))).second.get();
  if (!l->ok && why) *why = l->why;
  return l->ok ? &l->api : nullptr;
}

const NcclApi* try_nccl(std::string* why) {
  static const std::string path = nccl_library();
  return try_nccl_at(path, why);
}

void fill_peer_table(std::string_view target, ncclWindow_t window, int peers, CUdeviceptr table, CUstream stream) {
  const std::span<const std::uint8_t> cubin = peer_table_cubin(target);
  if (cubin.empty())
    throw std::invalid_argument(
        fmt::format("fill_peer_table: no peer-table kernel for {} (built for sm_90a, sm_100a, sm_120a)", target));
  if (peers < 1 || peers > 1024)
    throw std::invalid_argument(fmt::format("fill_peer_table: peers = {} is outside [1, 1024]", peers));
  std::string why;
  const NcclApi* nccl = try_nccl(&why);
  if (!nccl) throw std::runtime_error("fill_peer_table: " + why);
  if (!nccl->lsa_windows)
    throw std::runtime_error(fmt::format(
        "fill_peer_table: the loaded NCCL is {}.{}.{}, and the peer-table kernel reads the window layout of NCCL "
        "{}.{} (the headers moejit was built with): fill the table from the peers' addresses instead "
        "(init_rank_header, then ranks u64 entries at k_peer_table_offset)",
        nccl->version / 10000, nccl->version / 100 % 100, nccl->version % 100, k_nccl_built_version / 10000,
        k_nccl_built_version / 100 % 100));
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
  // The rank's own entry is `ws`, the address its kernels write through, not NCCL's second mapping of the same
  // pages: two virtual addresses of one buffer on one GPU are not coherent with each other (virtual aliasing),
  // and the roles read their own rows, routes and counters through the table too.
  const std::uint64_t self = ws;
  MOEJIT_CU(cuMemcpyHtoDAsync, ws + k_peer_table_offset + 8 * std::size_t(rank), &self, sizeof self, stream);
  MOEJIT_CU(cuStreamSynchronize, stream);
}

}  // namespace moejit::runtime
