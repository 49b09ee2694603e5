#pragma once
// The ranks this process drives over NCCL (docs/expert-parallelism.md, "NCCL"):
// one per process (bootstrapped through a unique-id file, as engines run) or
// all of them in one (ncclCommInitAll, for tests). Each rank has its GPU's
// primary context, a stream, a communicator and the symmetric workspace of
// its expert-parallel layer, whose peer table comes from NCCL's windows or
// from CUDA IPC handles exchanged over the communicator.

#include <cuda.h>
#include <nccl.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/nccl/nccl_peers.hpp"

namespace moejit::bench {

// How a rank learns the other ranks' workspaces. window: ncclMemAlloc + ncclCommWindowRegister, the table
// filled on the device from NCCL's LSA pointers (the loaded NCCL must be the headers' major.minor); ipc:
// cuMemAlloc'ed workspaces whose IPC handles travel by ncclAllGather (any NCCL; one process: the peers'
// pointers, with peer access enabled).
enum class PeerTable { window, ipc };
const char* peer_table_name(PeerTable t);

struct NcclRank {
  int rank = 0, ranks = 0, device = 0;
  CUdevice cu_device = 0;
  CUcontext ctx = nullptr;  // the device's primary context (NCCL's runtime uses it)
  CUstream stream = nullptr;
  ncclComm_t comm = nullptr;
  CUdeviceptr ws = 0;  // the layer's workspace, rank `rank` of the group
  std::int64_t ws_bytes = 0;
  ncclWindow_t window = nullptr;
  std::vector<CUdeviceptr> opened;  // ipc, one rank a process: the peers' workspaces opened here
};

class NcclRanks {
 public:
  // Rank `rank` of `ranks`, one a process, on GPU rank % (visible GPUs): rank 0 publishes the unique id at
  // `id_file`, the others wait for it; the communicator must form within `timeout` (else: aborted, and an error
  // naming the rank).
  static NcclRanks one_per_process(int rank, int ranks, const std::string& id_file, std::chrono::milliseconds timeout);
  // Every rank in this process, rank r on GPU r.
  static NcclRanks all_in_process(int ranks);
  NcclRanks(NcclRanks&&) = default;
  ~NcclRanks();

  std::vector<NcclRank>& local() { return local_; }
  int ranks() const { return ranks_; }
  const runtime::NcclApi& api() const { return *api_; }

  // Every local rank's workspace of `bytes`, its header (runtime::init_rank_workspace*) with `rank_timeout`, and
  // a barrier: no rank's first forward can start before every header is written.
  void setup_workspaces(std::int64_t bytes, PeerTable mode, std::chrono::nanoseconds rank_timeout,
                        std::string_view target);
  void free_workspaces();  // collective: every rank calls it
  // Every rank past this point: an all-reduce of one word, waited for.
  void barrier();
  // After a rank was lost: every communicator aborted, nothing collective, workspaces left to the process's end.
  void abandon();

  // Waits for a nonblocking communicator's last call; throws naming `what` (aborts on timeout).
  void settle(NcclRank& r, ncclResult_t started, const char* what, std::chrono::milliseconds timeout);

 private:
  NcclRanks(const runtime::NcclApi* api, int ranks) : api_(api), ranks_(ranks) {}
  const runtime::NcclApi* api_ = nullptr;
  int ranks_ = 0;
  std::vector<NcclRank> local_;
  PeerTable mode_ = PeerTable::window;
  bool healthy_ = true;
};

}  // namespace moejit::bench
