#pragma once
// NCCL for an expert-parallel layer (one process per GPU), loaded lazily:
// dlopen("libnccl.so.2"), like the driver. moejit links no NCCL, so a
// single-GPU layer never needs it, and an engine's process uses the NCCL it
// already loaded. What NCCL gives the layer is the peer table: every rank's
// symmetric workspace as this GPU addresses it, filled on the device from
// NCCL's window mapping by a kernel built with nvcc with moejit
// (runtime/nccl/peer_table.cu: NCCL's device header does not compile under
// NVRTC).

#include <nccl.h>

#include <chrono>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "runtime/driver_api.hpp"

namespace moejit::runtime {

// The NCCL entry points moejit uses: the communicator, the collectives of the
// 2-GPU program's baseline (bench/ep_nccl/), and the symmetric memory.
#define MOEJIT_NCCL_FUNCTIONS(X) \
  X(ncclGetVersion)              \
  X(ncclGetErrorString)          \
  X(ncclGetUniqueId)             \
  X(ncclCommInitRank)            \
  X(ncclCommInitAll)             \
  X(ncclCommAbort)               \
  X(ncclCommDestroy)             \
  X(ncclCommCount)               \
  X(ncclCommUserRank)            \
  X(ncclGroupStart)              \
  X(ncclGroupEnd)                \
  X(ncclAllGather)               \
  X(ncclAllReduce)               \
  X(ncclReduceScatter)           \
  X(ncclMemAlloc)                \
  X(ncclMemFree)                 \
  X(ncclCommWindowRegister)      \
  X(ncclCommWindowDeregister)

struct NcclApi {
#define MOEJIT_NCCL_MEMBER(name) decltype(&::name) name = nullptr;
  MOEJIT_NCCL_FUNCTIONS(MOEJIT_NCCL_MEMBER)
#undef MOEJIT_NCCL_MEMBER
  // NCCL 2.28 and later; null before (moejit_ep_nccl bench's all-to-all baseline then does not run).
  decltype(&::ncclAlltoAll) ncclAlltoAll = nullptr;
  int version = 0;  // the library's ncclGetVersion (major * 10000 + minor * 100 + patch)
  // Whether the peer-table kernel can read this library's windows: the same major.minor as the headers it was
  // built with (k_nccl_built_version). Without it a deployment fills the table itself (init_rank_header).
  bool lsa_windows = false;
};

// The library try_nccl loads: $MOEJIT_NCCL_LIBRARY where set (a path, e.g. the
// libnccl.so.2 of a Python environment's nvidia-nccl wheel), else libnccl.so.2
// from the loader's search path.
inline constexpr const char* k_nccl_library_env = "MOEJIT_NCCL_LIBRARY";
std::string nccl_library();

// The NCCL moejit's peer-table kernel was compiled against: the window layout
// it reads is this major.minor's, so the library must be the same major.minor.
inline constexpr int k_nccl_built_version = NCCL_VERSION_CODE;

// The loaded library, or null with `why` set: not found, an entry point
// missing, or older than NCCL 2.27 (the first with symmetric windows).
// The first call reads nccl_library(); the library then stays loaded.
const NcclApi* try_nccl(std::string* why = nullptr);
// The same for the library at `path` (loaded once a path).
const NcclApi* try_nccl_at(const std::string& path, std::string* why = nullptr);

// The peer-table kernel's cubin for `target` (sm_90a, sm_100a, sm_120a), empty for another.
std::span<const std::uint8_t> peer_table_cubin(std::string_view target);
inline constexpr const char* k_peer_table_entry = "moejit_fill_peer_table";

// table[r] = rank r's address of `window`'s base, r < peers, as this GPU
// addresses it: launched on `stream` in the current context (whose device is
// `target`). `table` is device memory of peers * 8 bytes.
void fill_peer_table(std::string_view target, ncclWindow_t window, int peers, CUdeviceptr table, CUstream stream);

// Expert parallelism over NCCL (docs/expert-parallelism.md): `ws` is this
// rank's workspace, the base of `window` (ncclMemAlloc'ed, registered with
// ncclCommWindowRegister on every rank of the communicator, `bytes` each);
// writes its header as runtime::init_rank_workspace does, with the peer table
// from NCCL's window (ncclGetPeerPointer) but entry `rank`, which is `ws`.
void init_rank_workspace_nccl(std::string_view target, ncclWindow_t window, CUdeviceptr ws, std::int64_t bytes,
                              int rank, int ranks, std::chrono::nanoseconds timeout, CUstream stream);

}  // namespace moejit::runtime
