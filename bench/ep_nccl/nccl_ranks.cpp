#include "bench/ep_nccl/nccl_ranks.hpp"

#include <fmt/format.h>

#include <cstring>
#include <stdexcept>
#include <thread>

#include "bench/ep_nccl/rank_launch.hpp"
#include "runtime/driver_api.hpp"
#include "runtime/ep_ranks.hpp"

namespace moejit::bench {
namespace {
using Clock = std::chrono::steady_clock;
constexpr std::chrono::milliseconds kCallTimeout{60000};  // a collective set-up call (registration, all-gather)

const runtime::NcclApi& load_nccl() {
  std::string why;
  const runtime::NcclApi* api = runtime::try_nccl(&why);
  if (!api) throw std::runtime_error(why);
  return *api;
}

void check_nccl(const runtime::NcclApi& api, ncclResult_t r, const char* what) {
  if (r != ncclSuccess && r != ncclInProgress)
    throw std::runtime_error(fmt::format("{} failed: {}", what, api.ncclGetErrorString(r)));
}

NcclRank open_device(int rank, int ranks, int device) {
  NcclRank r;
  r.rank = rank;
  r.ranks = ranks;
  r.device = device;
  MOEJIT_CU(cuDeviceGet, &r.cu_device, device);
  MOEJIT_CU(cuDevicePrimaryCtxRetain, &r.ctx, r.cu_device);
  MOEJIT_CU(cuCtxSetCurrent, r.ctx);
  MOEJIT_CU(cuStreamCreate, &r.stream, CU_STREAM_NON_BLOCKING);
  return r;
}
}  // namespace

const char* peer_table_name(PeerTable t) {
  return t == PeerTable::window ? "window" : "ipc";
}

void NcclRanks::settle(NcclRank& r, ncclResult_t started, const char* what, std::chrono::milliseconds timeout) {
  check_nccl(*api_, started, what);
  const auto t0 = Clock::now();
  for (;;) {
    ncclResult_t state = ncclSuccess;
    check_nccl(*api_, api_->ncclCommGetAsyncError(r.comm, &state), "ncclCommGetAsyncError");
    if (state == ncclSuccess) return;
    if (state != ncclInProgress) {
      healthy_ = false;
      throw std::runtime_error(fmt::format("rank {}: {} failed: {}", r.rank, what, api_->ncclGetErrorString(state)));
    }
    if (Clock::now() - t0 > timeout) {
      healthy_ = false;
      throw std::runtime_error(fmt::format("rank {}: {} did not complete within {} ms: a rank did not start, or died",
                                           r.rank, what, timeout.count()));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

NcclRanks NcclRanks::one_per_process(int rank, int ranks, const std::string& id_file,
                                     std::chrono::milliseconds timeout) {
  if (ranks < 2 || rank < 0 || rank >= ranks)
    throw std::invalid_argument(
        fmt::format("rank = {} of ranks = {}: need 0 <= rank < ranks, ranks >= 2", rank, ranks));
  const runtime::NcclApi& api = load_nccl();
  int devices = 0;
  MOEJIT_CU(cuDeviceGetCount, &devices);
  if (devices < 1) throw std::runtime_error("no GPU is visible");
  NcclRanks self(&api, ranks);
  self.local_.push_back(open_device(rank, ranks, rank % devices));
  NcclRank& r = self.local_.back();
  ncclUniqueId id{};
  if (rank == 0) {
    check_nccl(api, api.ncclGetUniqueId(&id), "ncclGetUniqueId");
    const auto* b = reinterpret_cast<const unsigned char*>(&id);
    publish_id(id_file, std::vector<unsigned char>(b, b + sizeof id));
  } else {
    const std::vector<unsigned char> b = await_id(id_file, sizeof id, timeout);
    std::memcpy(&id, b.data(), sizeof id);
  }
  // Nonblocking, so that a rank that never comes cannot hold this one in ncclCommInitRank.
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  MOEJIT_CU(cuCtxSetCurrent, r.ctx);
  self.settle(r, api.ncclCommInitRankConfig(&r.comm, ranks, id, rank, &config), "ncclCommInitRankConfig", timeout);
  return self;
}

NcclRanks NcclRanks::all_in_process(int ranks) {
  const runtime::NcclApi& api = load_nccl();
  int devices = 0;
  MOEJIT_CU(cuDeviceGetCount, &devices);
  if (ranks < 2 || ranks > devices)
    throw std::invalid_argument(
        fmt::format("--single-process {}: needs 2 to {} ranks, one a visible GPU", ranks, devices));
  NcclRanks self(&api, ranks);
  std::vector<int> ordinals;
  for (int r = 0; r < ranks; ++r) {
    self.local_.push_back(open_device(r, ranks, r));
    ordinals.push_back(r);
  }
  std::vector<ncclComm_t> comms(ranks);
  MOEJIT_CU(cuCtxSetCurrent, self.local_[0].ctx);
  check_nccl(api, api.ncclCommInitAll(comms.data(), ranks, ordinals.data()), "ncclCommInitAll");
  for (int r = 0; r < ranks; ++r) self.local_[r].comm = comms[r];
  return self;
}

void NcclRanks::setup_workspaces(std::int64_t bytes, PeerTable mode, std::chrono::nanoseconds rank_timeout,
                                 std::string_view target) {
  if (mode == PeerTable::window && !api_->lsa_windows)
    throw std::runtime_error(fmt::format(
        "--peers window: the loaded NCCL {} is not the major.minor of moejit's headers ({}): use --peers ipc",
        api_->version, runtime::k_nccl_built_version));
  mode_ = mode;
  const bool grouped = local_.size() > 1;  // one process: a collective over every comm is one group
  for (NcclRank& r : local_) {
    MOEJIT_CU(cuCtxSetCurrent, r.ctx);
    r.ws_bytes = bytes;
    if (mode == PeerTable::window) {
      void* p = nullptr;
      check_nccl(*api_, api_->ncclMemAlloc(&p, std::size_t(bytes)), "ncclMemAlloc");
      r.ws = reinterpret_cast<CUdeviceptr>(p);
    } else {
      MOEJIT_CU(cuMemAlloc, &r.ws, std::size_t(bytes));
    }
  }
  if (mode == PeerTable::window) {
    if (grouped) check_nccl(*api_, api_->ncclGroupStart(), "ncclGroupStart");
    for (NcclRank& r : local_) {
      MOEJIT_CU(cuCtxSetCurrent, r.ctx);
      check_nccl(*api_,
                 api_->ncclCommWindowRegister(r.comm, reinterpret_cast<void*>(r.ws), std::size_t(bytes), &r.window,
                                              NCCL_WIN_COLL_SYMMETRIC),
                 "ncclCommWindowRegister");
    }
    if (grouped) check_nccl(*api_, api_->ncclGroupEnd(), "ncclGroupEnd");
    for (NcclRank& r : local_) {
      settle(r, ncclSuccess, "ncclCommWindowRegister", kCallTimeout);
      MOEJIT_CU(cuCtxSetCurrent, r.ctx);
      runtime::init_rank_workspace_nccl(target, r.window, r.ws, bytes, r.rank, ranks_, rank_timeout, r.stream);
    }
  } else if (grouped) {
    // One process: every workspace is this process's memory, reachable with peer access.
    std::vector<CUdeviceptr> peers;
    for (NcclRank& r : local_) peers.push_back(r.ws);
    for (NcclRank& r : local_) {
      MOEJIT_CU(cuCtxSetCurrent, r.ctx);
      for (NcclRank& s : local_) {
        if (&s == &r) continue;
        int can = 0;
        MOEJIT_CU(cuDeviceCanAccessPeer, &can, r.cu_device, s.cu_device);
        if (!can) throw std::runtime_error(fmt::format("GPU {} cannot access GPU {}'s memory", r.device, s.device));
        const CUresult e = runtime::driver().cuCtxEnablePeerAccess(s.ctx, 0);
        if (e != CUDA_SUCCESS && e != CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED)
          runtime::check_cu(e, "cuCtxEnablePeerAccess");
      }
      runtime::init_rank_workspace(r.ws, bytes, r.rank, peers, rank_timeout, r.stream);
    }
  } else {
    // One rank a process: the IPC handles travel over the communicator.
    NcclRank& r = local_.front();
    MOEJIT_CU(cuCtxSetCurrent, r.ctx);
    CUipcMemHandle mine{};
    MOEJIT_CU(cuIpcGetMemHandle, &mine, r.ws);
    CUdeviceptr send = 0, recv = 0;
    MOEJIT_CU(cuMemAlloc, &send, sizeof mine);
    MOEJIT_CU(cuMemAlloc, &recv, sizeof mine * ranks_);
    MOEJIT_CU(cuMemcpyHtoD, send, &mine, sizeof mine);
    settle(r,
           api_->ncclAllGather(reinterpret_cast<void*>(send), reinterpret_cast<void*>(recv), sizeof mine, ncclUint8,
                               r.comm, r.stream),
           "ncclAllGather (IPC handles)", kCallTimeout);
    MOEJIT_CU(cuStreamSynchronize, r.stream);
    std::vector<CUipcMemHandle> handles(ranks_);
    MOEJIT_CU(cuMemcpyDtoH, handles.data(), recv, sizeof mine * ranks_);
    MOEJIT_CU(cuMemFree, send);
    MOEJIT_CU(cuMemFree, recv);
    std::vector<CUdeviceptr> peers(ranks_);
    for (int s = 0; s < ranks_; ++s) {
      if (s == r.rank) {
        peers[s] = r.ws;
        continue;
      }
      MOEJIT_CU(cuIpcOpenMemHandle, &peers[s], handles[s], CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
      r.opened.push_back(peers[s]);
    }
    runtime::init_rank_workspace(r.ws, bytes, r.rank, peers, rank_timeout, r.stream);
  }
  for (NcclRank& r : local_) MOEJIT_CU(cuStreamSynchronize, r.stream);
  barrier();
}

void NcclRanks::barrier() {
  std::vector<CUdeviceptr> words(local_.size());
  const bool grouped = local_.size() > 1;
  if (grouped) check_nccl(*api_, api_->ncclGroupStart(), "ncclGroupStart");
  for (std::size_t i = 0; i < local_.size(); ++i) {
    NcclRank& r = local_[i];
    MOEJIT_CU(cuCtxSetCurrent, r.ctx);
    MOEJIT_CU(cuMemAlloc, &words[i], 4);
    MOEJIT_CU(cuMemsetD8Async, words[i], 0, 4, r.stream);
    check_nccl(*api_,
               api_->ncclAllReduce(reinterpret_cast<void*>(words[i]), reinterpret_cast<void*>(words[i]), 1, ncclInt32,
                                   ncclSum, r.comm, r.stream),
               "ncclAllReduce (barrier)");
  }
  if (grouped) check_nccl(*api_, api_->ncclGroupEnd(), "ncclGroupEnd");
  for (std::size_t i = 0; i < local_.size(); ++i) {
    NcclRank& r = local_[i];
    settle(r, ncclSuccess, "the barrier's ncclAllReduce", kCallTimeout);
    MOEJIT_CU(cuCtxSetCurrent, r.ctx);
    MOEJIT_CU(cuStreamSynchronize, r.stream);
    MOEJIT_CU(cuMemFree, words[i]);
  }
}

void NcclRanks::free_workspaces() {
  barrier();  // no peer still reads this rank's workspace
  const bool grouped = local_.size() > 1;
  if (mode_ == PeerTable::window && grouped) check_nccl(*api_, api_->ncclGroupStart(), "ncclGroupStart");
  for (NcclRank& r : local_) {
    MOEJIT_CU(cuCtxSetCurrent, r.ctx);
    if (mode_ == PeerTable::window && r.window)
      check_nccl(*api_, api_->ncclCommWindowDeregister(r.comm, r.window), "ncclCommWindowDeregister");
  }
  if (mode_ == PeerTable::window && grouped) check_nccl(*api_, api_->ncclGroupEnd(), "ncclGroupEnd");
  for (NcclRank& r : local_) {
    if (mode_ == PeerTable::window && r.window) settle(r, ncclSuccess, "ncclCommWindowDeregister", kCallTimeout);
    MOEJIT_CU(cuCtxSetCurrent, r.ctx);
    for (CUdeviceptr p : r.opened) MOEJIT_CU(cuIpcCloseMemHandle, p);
    r.opened.clear();
    if (r.ws) {
      if (mode_ == PeerTable::window)
        check_nccl(*api_, api_->ncclMemFree(reinterpret_cast<void*>(r.ws)), "ncclMemFree");
      else
        MOEJIT_CU(cuMemFree, r.ws);
    }
    r.ws = 0;
    r.window = nullptr;
  }
  barrier();  // every rank's IPC mappings closed before an exporter frees the next workspace's memory
}

void NcclRanks::abandon() {
  healthy_ = false;
  for (NcclRank& r : local_)
    if (r.comm) {
      api_->ncclCommAbort(r.comm);
      r.comm = nullptr;
    }
}

NcclRanks::~NcclRanks() {
  for (NcclRank& r : local_) {
    if (r.comm) {
      runtime::driver().cuCtxSetCurrent(r.ctx);
      // A healthy group is torn down by the caller (free_workspaces); here only what is left, without collectives.
      if (healthy_)
        api_->ncclCommDestroy(r.comm);
      else
        api_->ncclCommAbort(r.comm);
    }
    if (r.stream) runtime::driver().cuStreamDestroy(r.stream);
    if (r.ctx) runtime::driver().cuDevicePrimaryCtxRelease(r.cu_device);
  }
}

}  // namespace moejit::bench
