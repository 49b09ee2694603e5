#include "bench/ep_nccl/nccl_ranks.hpp"

#include <fmt/format.h>

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "bench/ep_nccl/rank_launch.hpp"
#include "runtime/driver_api.hpp"
#include "runtime/ep_ranks.hpp"

namespace moejit::bench {
namespace {
const runtime::NcclApi& load_nccl() {
  std::string why;
  const runtime::NcclApi* api = runtime::try_nccl(&why);
  if (!api) throw std::runtime_error(why);
  return *api;
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

std::size_t window_bytes(std::int64_t bytes) {  // NCCL_WIN_REQUIRED_ALIGNMENT
  return (std::size_t(bytes) + NCCL_WIN_REQUIRED_ALIGNMENT - 1) / NCCL_WIN_REQUIRED_ALIGNMENT *
         NCCL_WIN_REQUIRED_ALIGNMENT;
}
}  // namespace

const char* peer_table_name(PeerTable t) {
  return t == PeerTable::window ? "window" : "ipc";
}

void NcclRanks::check(ncclResult_t r, const char* what) const {
  if (r != ncclSuccess) throw std::runtime_error(fmt::format("{} failed: {}", what, api_->ncclGetErrorString(r)));
}

NcclRanks NcclRanks::one_per_process(int rank, int ranks, const std::string& id_file,
                                     std::chrono::milliseconds timeout) {
  if (ranks < 2 || rank < 0 || rank >= ranks)
    throw std::invalid_argument(
        fmt::format("rank = {} of ranks = {}: need 0 <= rank < ranks, ranks >= 2", rank, ranks));
  const runtime::NcclApi& api = load_nccl();
  int devices = 0;
  MOEJIT_CU(cuDeviceGetCount, &devices);
  if (devices != 1 && devices < ranks)
    throw std::runtime_error(
        fmt::format("rank {} of {}: {} GPUs are visible; one a rank (GPU r for rank r), or "
                    "one GPU per process (CUDA_VISIBLE_DEVICES)",
                    rank, ranks, devices));
  NcclRanks self(&api, ranks);
  self.local_.push_back(open_device(rank, ranks, devices == 1 ? 0 : rank));
  NcclRank& r = self.local_.back();
  ncclUniqueId id{};
  if (rank == 0) {
    self.check(api.ncclGetUniqueId(&id), "ncclGetUniqueId");
    const auto* b = reinterpret_cast<const unsigned char*>(&id);
    publish_id(id_file, std::vector<unsigned char>(b, b + sizeof id));
  } else {
    const std::vector<unsigned char> b = await_id(id_file, sizeof id, timeout);
    std::memcpy(&id, b.data(), sizeof id);
  }
  // Blocking, so that every later call is done when it returns (a nonblocking communicator's calls come back
  // in progress, and their polling would stand inside the bench's timed region); a rank that never comes ends
  // this one through the watchdog instead.
  const Watchdog guard(timeout, fmt::format("rank {}: ncclCommInitRank of {} ranks (id file {})", rank, ranks, id_file),
                       kExitRankGone);
  const ncclResult_t init = api.ncclCommInitRank(&r.comm, ranks, id, rank);
  // A rank that joined a dead run's id finds no root: NCCL gives up its connection retries and fails here.
  if (init != ncclSuccess && rank != 0)
    throw std::runtime_error(
        fmt::format("ncclCommInitRank failed: {} (rank {} read the id in {}: a file an earlier "
                    "run left, if its rank 0 died before removing it?)",
                    api.ncclGetErrorString(init), rank, id_file));
  self.check(init, "ncclCommInitRank");
  // Every rank has joined, so the id is read everywhere: remove it, so that an engine's next run, started with
  // the same path, waits for its own rank 0 rather than join this run's id.
  if (rank == 0 && ::unlink(id_file.c_str()) != 0 && errno != ENOENT)
    throw std::runtime_error(fmt::format("cannot remove {}: {}", id_file, std::strerror(errno)));
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
  self.check(api.ncclCommInitAll(comms.data(), ranks, ordinals.data()), "ncclCommInitAll");
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
      check(api_->ncclMemAlloc(&p, window_bytes(bytes)), "ncclMemAlloc");
      r.ws = reinterpret_cast<CUdeviceptr>(p);
    } else {
      MOEJIT_CU(cuMemAlloc, &r.ws, std::size_t(bytes));
    }
  }
  if (mode == PeerTable::window) {
    {
      const Watchdog guard(kSetupStepTimeout, "ncclCommWindowRegister", kExitRankGone);
      if (grouped) check(api_->ncclGroupStart(), "ncclGroupStart");
      for (NcclRank& r : local_) {
        MOEJIT_CU(cuCtxSetCurrent, r.ctx);
        // NCCL_WIN_DEFAULT: the workspace is no collective's buffer; only its peers' addresses are wanted.
        check(api_->ncclCommWindowRegister(r.comm, reinterpret_cast<void*>(r.ws), window_bytes(bytes), &r.window,
                                           NCCL_WIN_DEFAULT),
              "ncclCommWindowRegister");
      }
      if (grouped) check(api_->ncclGroupEnd(), "ncclGroupEnd");
    }
    for (NcclRank& r : local_) {
      // Without symmetric memory (NCCL_CUMEM_ENABLE=0, NCCL_WIN_ENABLE=0, no P2P between some pair) the
      // registration succeeds with a local handle whose peers the device cannot reach: refuse it here. NCCL
      // 2.28 then returns its host-side registration record, not null, so the window must be device memory
      // before the peer-table kernel reads it (else an illegal address takes the context down).
      MOEJIT_CU(cuCtxSetCurrent, r.ctx);
      CUmemorytype where = CU_MEMORYTYPE_HOST;
      const bool on_device =
          r.window &&
          runtime::driver().cuPointerGetAttribute(&where, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                                  reinterpret_cast<CUdeviceptr>(r.window)) == CUDA_SUCCESS &&
          where == CU_MEMORYTYPE_DEVICE;
      if (!on_device)
        throw std::runtime_error(
            fmt::format("rank {}: ncclCommWindowRegister gave no window (symmetric memory is "
                        "off in this NCCL: CUDA P2P, NCCL_CUMEM_ENABLE, NCCL_WIN_ENABLE); "
                        "use --peers ipc",
                        r.rank));
      runtime::init_rank_workspace_nccl(target, r.window, r.ws, bytes, r.rank, ranks_, rank_timeout, r.stream);
      // The table as the kernels will read it: every entry a device address, 256-byte aligned, this rank's its
      // own workspace and no other's.
      std::vector<std::uint64_t> table(ranks_);
      MOEJIT_CU(cuMemcpyDtoH, table.data(), r.ws + runtime::k_peer_table_offset, table.size() * 8);
      for (int s = 0; s < ranks_; ++s)
        if (table[s] == 0 || table[s] % 256 != 0 || (s == r.rank) != (table[s] == r.ws))
          throw std::runtime_error(
              fmt::format("rank {}: the peer table's entry {} is 0x{:x} (from NCCL's window; this "
                          "rank's workspace is 0x{:x}): not a workspace; use --peers ipc",
                          r.rank, s, table[s], r.ws));
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
    {
      const Watchdog guard(kSetupStepTimeout, "the IPC handles' ncclAllGather", kExitRankGone);
      check(api_->ncclAllGather(reinterpret_cast<void*>(send), reinterpret_cast<void*>(recv), sizeof mine, ncclUint8,
                                r.comm, r.stream),
            "ncclAllGather (IPC handles)");
      MOEJIT_CU(cuStreamSynchronize, r.stream);
    }
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
  for (NcclRank& r : local_) {
    MOEJIT_CU(cuCtxSetCurrent, r.ctx);
    MOEJIT_CU(cuStreamSynchronize, r.stream);
  }
  barrier();
}

void NcclRanks::barrier() {
  const Watchdog guard(kSetupStepTimeout, "a barrier of the ranks", kExitRankGone);
  const AbortOnThrow abort_on_throw(*this);  // before its buffers' frees wait on an all-reduce whose peer is gone
  std::vector<CUdeviceptr> words(local_.size());
  const bool grouped = local_.size() > 1;
  for (std::size_t i = 0; i < local_.size(); ++i) {
    MOEJIT_CU(cuCtxSetCurrent, local_[i].ctx);
    MOEJIT_CU(cuMemAlloc, &words[i], 4);
    MOEJIT_CU(cuMemsetD8Async, words[i], 0, 4, local_[i].stream);
  }
  if (grouped) check(api_->ncclGroupStart(), "ncclGroupStart");
  for (std::size_t i = 0; i < local_.size(); ++i) {
    NcclRank& r = local_[i];
    MOEJIT_CU(cuCtxSetCurrent, r.ctx);
    check(api_->ncclAllReduce(reinterpret_cast<void*>(words[i]), reinterpret_cast<void*>(words[i]), 1, ncclInt32,
                              ncclSum, r.comm, r.stream),
          "ncclAllReduce (barrier)");
  }
  if (grouped) check(api_->ncclGroupEnd(), "ncclGroupEnd");
  for (std::size_t i = 0; i < local_.size(); ++i) {
    MOEJIT_CU(cuCtxSetCurrent, local_[i].ctx);
    MOEJIT_CU(cuStreamSynchronize, local_[i].stream);
    MOEJIT_CU(cuMemFree, words[i]);
  }
}

void NcclRanks::free_workspaces() {
  barrier();  // no peer still reads this rank's workspace
  for (NcclRank& r : local_) {
    MOEJIT_CU(cuCtxSetCurrent, r.ctx);
    if (r.window) check(api_->ncclCommWindowDeregister(r.comm, r.window), "ncclCommWindowDeregister");
    r.window = nullptr;
    for (CUdeviceptr p : r.opened) MOEJIT_CU(cuIpcCloseMemHandle, p);
    r.opened.clear();
  }
  barrier();  // every rank's mappings of the others' workspaces closed before any of them is freed
  for (NcclRank& r : local_) {
    MOEJIT_CU(cuCtxSetCurrent, r.ctx);
    if (r.ws) {
      if (mode_ == PeerTable::window)
        check(api_->ncclMemFree(reinterpret_cast<void*>(r.ws)), "ncclMemFree");
      else
        MOEJIT_CU(cuMemFree, r.ws);
    }
    r.ws = 0;
  }
}

void NcclRanks::abandon() {
  healthy_ = false;
  for (NcclRank& r : local_)
    if (r.comm) {
      runtime::driver().cuCtxSetCurrent(r.ctx);
      api_->ncclCommAbort(r.comm);
      r.comm = nullptr;
    }
}

NcclRanks::~NcclRanks() {
  // Every communicator first (in one process the last destroy finalizes them all), then streams and contexts.
  // ncclCommDestroy synchronizes within the node: bounded, as every other step that can wait on a peer.
  const Watchdog guard(kSetupStepTimeout, "the communicators' teardown", kExitRankGone);
  if (!healthy_ || std::uncaught_exceptions() > 0) abandon();
  for (NcclRank& r : local_)
    if (r.comm) {
      runtime::driver().cuCtxSetCurrent(r.ctx);
      api_->ncclCommDestroy(r.comm);
      r.comm = nullptr;
    }
  for (NcclRank& r : local_) {
    if (r.stream) runtime::driver().cuStreamDestroy(r.stream);
    if (r.ctx) runtime::driver().cuDevicePrimaryCtxRelease(r.cu_device);
  }
}

}  // namespace moejit::bench
