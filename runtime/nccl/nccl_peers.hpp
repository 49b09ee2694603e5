#pragma once
// NCCL for an expert-parallel layer (one process per GPU), loaded lazily:
// dlopen("libnccl.so.2"), like the driver. moejit links no NCCL, so a
// single-GPU layer never needs it, and an engine's process uses the NCCL it
// already loaded. What NCCL gives the layer is the peer table: every rank's
// symmetric workspace as this GPU addresses it, filled on the device from
// NCCL's LSA window mapping by a kernel built with nvcc with moejit
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

// Every NCCL entry point moejit uses.
#define MOEJIT_NCCL_FUNCTIONS(X) \
  X(ncclGetVersion)              \
  X(ncclGetErrorString)          \
  X(ncclGetUniqueId)             \
  X(ncclCommInitRank)            \
  X(ncclCommInitAll)             \
  X(ncclCommDestroy)             \
  X(ncclCommCount)               \
  X(ncclCommUserRank)            \
  X(ncclMemAlloc)                \
  X(ncclMemFree)                 \
  X(ncclCommWindowRegister)      \
  X(ncclCommWindowDeregister)

struct NcclApi {
#define MOEJIT_NCCL_MEMBER(name) decltype(&::name) name = nullptr;
  MOEJIT_NCCL_FUNCTIONS(MOEJIT_NCCL_MEMBER)
#undef MOEJIT_NCCL_MEMBER
  int version = 0;  // the library's ncclGetVersion (major * 10000 + minor * 100 + patch)
};

// The NCCL moejit's peer-table kernel was compiled against: the window layout
// it reads is this major.minor's, so the library must be the same major.minor.
inline constexpr int k_nccl_built_version = NCCL_VERSION_CODE;

// The loaded library, or null with `why` set: not found, an entry point
// missing, or another major.minor than k_nccl_built_version.
const NcclApi* try_nccl(std::string* why = nullptr);

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
// from NCCL's LSA pointers.
void init_rank_workspace_nccl(std::string_view target, ncclWindow_t window, CUdeviceptr ws, std::int64_t bytes,
                              int rank, int ranks, std::chrono::nanoseconds timeout, CUstream stream);

}  // namespace moejit::runtime
