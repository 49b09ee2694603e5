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
#include <exception>
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

// A step that waits on the other ranks and found one gone ends the process with this code (Watchdog).
inline constexpr int kExitRankGone = 3;
// The watchdogs' bounds: a set-up step (window registration, an all-gather, a barrier, the teardown), whose
// peers are there, so a minute is a lost rank; a timed loop of the bench (its 48 forwards of EP or baseline).
// The launcher's grace after a rank fails outlasts the longest (ep_nccl_main.cpp), so that a survivor's
// watchdog names the step it waited in before the launcher would call it hung.
inline constexpr std::chrono::milliseconds kSetupStepTimeout{60000};
inline constexpr std::chrono::milliseconds kTimedStepTimeout{120000};

class NcclRanks {
 public:
  // Rank `rank` of `ranks`, one a process, on GPU `rank` (GPU 0 where one GPU is visible: a launcher that gives
  // each process its own): rank 0 publishes the unique id at `id_file`, the others wait for it; the
  // communicator must form within `timeout`, else the process ends (Watchdog) naming the rank.
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
  // Every rank past this point (an all-reduce of one word, waited for), within a minute or the process ends.
  void barrier();
  // After a rank was lost, or on an error: every communicator aborted (its kernels too), nothing collective.
  void abandon();
  // Throws naming `what` unless `r` is ncclSuccess (the communicators are blocking).
  void check(ncclResult_t r, const char* what) const;

 private:
  NcclRanks(const runtime::NcclApi* api, int ranks) : api_(api), ranks_(ranks) {}
  const runtime::NcclApi* api_ = nullptr;
  int ranks_ = 0;
  std::vector<NcclRank> local_;
  PeerTable mode_ = PeerTable::window;
  bool healthy_ = true;
};

// Declared after the layers that use the ranks' streams: destroyed by an exception, it aborts the communicators
// before the layers' destructors wait on those streams, which an NCCL kernel whose peer is gone keeps busy.
class AbortOnThrow {
 public:
  explicit AbortOnThrow(NcclRanks& ranks) : ranks_(ranks), exceptions_(std::uncaught_exceptions()) {}
  ~AbortOnThrow() {
    if (std::uncaught_exceptions() > exceptions_) ranks_.abandon();
  }

 private:
  NcclRanks& ranks_;
  int exceptions_;
};

}  // namespace moejit::bench
