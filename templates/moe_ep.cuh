#pragma once
// Expert parallelism, the device side: R ranks, each with its own workspace,
// reach one another only through the peer table in their header
// (contract::MoeHeader::peers), so partitions of one GPU, NCCL's symmetric
// windows and a caller's table all look the same here.
//
// The protocol of one forward n (every rank runs the same forwards):
//   dispatch (rank s): its x rows, topk_ids, topk_weights and token count into
//     its workspace, then `dispatched = n` (release, system scope);
//   compute (rank r): waits until every rank has dispatched n, then runs the
//     routes of all ranks' tokens that reach r's experts (route t * k + j of
//     rank s is s * Bcap * k + t * k + j here: EpRoutes), reading x rows and
//     weights from their owners and writing each route's BF16 output row for
//     its owner's finalize; its last CTA bumps `epoch` to n;
//   finalize (rank s): waits until every rank's epoch reached n, then combines
//     its tokens' k rows as on one GPU.
// The plan's contract::EpMode bits choose where the pieces travel: route
// metadata pushed to every rank (kEpMirror) or pulled with each needed row
// once by the receiving rank's dispatch (kEpPull), output rows kept where they
// were computed (kEpStagedReturns), and one CTA scanning the peers for the
// others (kEpDirectScan); docs/expert-parallelism.md.
// Nothing is reset between forwards: a rank's next dispatch is stream-ordered
// after its finalize, which waited for every compute of this forward, so no
// rank can overwrite rows another still reads. Every cross-rank wait is
// bounded by the header's timeout and reports the rank and counter it gave up
// on (contract::EpWait) instead of hanging.

#include "moe_contract.cuh"
#include "moe_ptx.cuh"

namespace moejit {

__device__ __forceinline__ int ld_acquire_sys(const int* p) {
  int v;
  asm volatile("ld.acquire.sys.global.s32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void st_release_sys(int* p, int v) {
  asm volatile("st.release.sys.global.s32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ int ld_volatile(const int* p) {
  return *reinterpret_cast<const volatile int*>(p);
}

// Claims header `h`'s error word for (what, rank, value) unless it holds one: claimed at system scope (the
// other ranks claim it too, from their GPUs), its rank and value written, then the cause published, so that a
// host that reads the cause reads its rank and value with it (rank_wait_error).
__device__ inline bool ep_claim(contract::MoeHeader* h, int what, int rank, int value) {
  if (atomicCAS_system(&h->error, 0, int(contract::kEpWaitClaimed)) != 0) return false;
  h->error_rank = rank;
  h->error_value = value;
  __threadfence_system();
  st_release_sys(&h->error, what);
  return true;
}

// Records (what, rank, value) as this workspace's first error, unless one is
// there, and tells every other rank (contract::kEpWaitPeer, naming this one)
// so that none of them takes this forward for a good one: a rank that gave up
// still finishes its grids, and its counters move on.
__device__ inline void ep_fail(contract::MoeHeader* own, int what, int rank, int value, bool tell_peers = true) {
  if (!ep_claim(own, what, rank, value)) return;
  if (tell_peers && own->ranks <= contract::kMaxRanks)
    for (int s = 0; s < own->ranks; ++s) {
      auto* peer = reinterpret_cast<contract::MoeHeader*>(own->peers[s]);
      if (s == own->rank || peer == nullptr) continue;
      ep_claim(peer, contract::kEpWaitPeer, own->rank, what);
    }
  __threadfence_system();
}

// Polls until poll(seen) says the counter is met (1), or gives up: the counter
// can never be met (-1: it is past this forward's, the ranks have run
// different forwards), `patience` times the header's timeout has passed since
// `start`, or this rank already has an error (its own wait, or another rank's
// that gave up). Giving up records (what, rank, the value last seen) through
// ep_fail. A wait behind another bounded wait of this rank (on the pull, on
// the gate) has patience 2, so that the first one reports the cause.
template <class Poll>
__device__ bool ep_wait(contract::MoeHeader* own, u64 start, int what, int rank, Poll poll, int patience = 1) {
  int seen = 0;
  for (;;) {
    const int state = poll(seen);
    const bool failed = ld_volatile(&own->error) != 0;
    if (state > 0 && !failed) return true;
    if (state < 0 || failed || globaltimer() - start > u64(patience) * u64(own->timeout_ns)) {
      ep_fail(own, state < 0 ? int(contract::kEpWaitSkew) : what, rank, seen);
      return false;
    }
    __nanosleep(128);
  }
}
// The counter `at` (a rank's `dispatched` or `epoch`) against this forward's `want`.
__device__ __forceinline__ int ep_counter(const int* at, int want, int& seen) {
  seen = ld_acquire_sys(at);
  return seen == want ? 1 : seen > want ? -1 : 0;
}

// The workspace layout of the role kernels' dimensions, as a type (EpRoutes' Layout).
template <int kExperts, int kTopK, int kHidden, int kInter, int kCapacity, int kPath, int kShared, int kRanks,
          int kEp = 0>
struct EpLayout {
  static constexpr contract::WorkspaceLayout kWs =
      contract::workspace_layout({kExperts, kTopK, kHidden, kInter, kCapacity, kPath, kShared, kRanks, kEp});
  static constexpr int kHiddenDim = kHidden, kRowsPath = kPath, kMode = kEp;
  // One rank's x regions (x_q ... handoff), as kEpPull copies them into ep_rows.
  static constexpr long long kXSpan = kWs.handoff - kWs.x_q;
};

// The rows of one workspace region `at` bytes in, `pitch` bytes apart, as ep_rows slot `s` holds them.
template <class Layout>
__device__ __forceinline__ u8* pulled_rows(u8* ws, int s, long long at) {
  return ws + Layout::kWs.ep_rows + s * Layout::kXSpan + (at - Layout::kWs.x_q);
}

// Routes across ranks, as the compute role of rank `rank` sees them: route vr
// is route `local(vr)` (t * k + j) of rank `rank_of(vr)`'s tokens. Where each
// piece is read from is the plan's (contract::EpMode): route metadata from the
// owner's workspace or the local mirror, GEMM1 rows from the owner or the
// pulled copies, output rows into the owner's arena or the local relay arena.
template <int kExperts, int kTopK, int kCapacity, int kRanks, class Layout>
struct EpRoutes {
  static constexpr int kEp = Layout::kMode;
  static constexpr bool kLocalMetadata = (kEp & (contract::kEpMirror | contract::kEpPull)) != 0;
  static constexpr bool kMirroredScales = (kEp & contract::kEpMirror) && contract::path_fp8_rows(Layout::kRowsPath);
  static constexpr int kSpan = kCapacity * kTopK;  // route indices of a rank
  static constexpr int kSpans = kRanks;
  const contract::MoeHeader* own;
  bool arrived;  // false: the ranks' routes never arrived, and there are none

  __device__ static int rank_of(int vr) { return vr / kSpan; }
  __device__ static int local(int vr) { return vr % kSpan; }
  __device__ const u8* base() const { return reinterpret_cast<const u8*>(own) - Layout::kWs.header; }
  __device__ const u8* peer(int s) const { return reinterpret_cast<const u8*>(own->peers[s]); }
  __device__ const contract::MoeHeader* peer_header(int s) const {
    return reinterpret_cast<const contract::MoeHeader*>(peer(s) + Layout::kWs.header);
  }
  // Rank s's routes: k per token it dispatched.
  __device__ int span_begin(int s) const { return s * kSpan; }
  __device__ int span_size(int s) const {
    if (!arrived) return 0;
    if constexpr (kLocalMetadata) return reinterpret_cast<const i32*>(base() + Layout::kWs.ep_tokens)[s] * kTopK;
    return peer_header(s)->tokens * kTopK;
  }
  // This rank's expert of route vr, one of a span's (its E / R experts are the global ids rank * E / R ...),
  // or -1: another rank's expert, or out of range (the owner's finalize poisons its token).
  __device__ int expert(int vr) const {
    const i32* ids = kLocalMetadata
                         ? reinterpret_cast<const i32*>(base() + Layout::kWs.ep_ids) + vr
                         : reinterpret_cast<const i32*>(peer(rank_of(vr)) + Layout::kWs.route_ids) + local(vr);
    const int id = *ids - own->rank * kExperts;
    return unsigned(id) < unsigned(kExperts) ? id : -1;
  }
  __device__ float weight(int vr) const {
    if constexpr (kLocalMetadata) return reinterpret_cast<const float*>(base() + Layout::kWs.ep_weights)[vr];
    return reinterpret_cast<const float*>(peer(rank_of(vr)) + Layout::kWs.route_weights)[local(vr)];
  }
  // The GEMM1 row of route vr's token in the owner's region `at` bytes into a workspace, rows `pitch` apart:
  // another rank's pulled copy (kEpPull), else the owner's own.
  __device__ const u8* row(int vr, long long at, long long pitch) const {
    const int s = rank_of(vr);
    const long long t = local(vr) / kTopK;
    if ((kEp & contract::kEpPull) && s != own->rank)
      return pulled_rows<Layout>(const_cast<u8*>(base()), s, at) + t * pitch;
    return peer(s) + at + t * pitch;
  }
  // Its x scale words (region `at`, `pitch` bytes a token): mirrored (kEpMirror) or where its row is.
  __device__ const u8* scale_row(int vr, long long at, long long pitch) const {
    if constexpr (kMirroredScales)
      return base() + Layout::kWs.ep_scales + ((long long)rank_of(vr) * kCapacity + local(vr) / kTopK) * pitch;
    return row(vr, at, pitch);
  }
  // Where route vr's BF16 output row goes: the local relay arena (kEpStagedReturns), which the owner's
  // finalize reads, or the owner's arena.
  __device__ u16* arena_row(int vr, int hidden) const {
    if constexpr (kEp & contract::kEpStagedReturns)
      return reinterpret_cast<u16*>(const_cast<u8*>(base()) + Layout::kWs.ep_relay) + (long long)vr * hidden;
    return reinterpret_cast<u16*>(const_cast<u8*>(peer(rank_of(vr))) + Layout::kWs.arena) +
           (long long)local(vr) * hidden;
  }
};

// Thread 0 of a compute CTA: whether every rank's dispatch of forward `tag` has arrived, waited for as the
// plan's EpMode bits say (kEpPull: this rank's dispatch already waited and pulled, a local wait; kEpDirectScan:
// CTA 0 polls the peers and opens this workspace's gate for the others; else each CTA polls them). False once a
// bounded wait gave up, which it reported (ep_wait); a rank that never dispatches is reported too.
template <int kRanks, class Routes>
__device__ bool ep_dispatches_arrived(contract::MoeHeader* own, const Routes& e, int tag) {
  constexpr int kEp = Routes::kEp;
  bool arrived = own->ranks == kRanks;  // else no peer table of this many ranks to read
  if (!arrived) ep_fail(own, contract::kEpWaitSetup, own->rank, own->ranks, false);
  const u64 start = globaltimer();
  auto wait_dispatched = [&] {  // every rank's dispatch of this forward, over the link
    for (int s = 0; s < kRanks && arrived; ++s)
      arrived = ep_wait(own, start, contract::kEpWaitDispatch, s,
                        [&](int& seen) { return ep_counter(&e.peer_header(s)->dispatched, tag, seen); });
  };
  if constexpr (kEp & contract::kEpPull) {
    if (arrived)
      arrived = ep_wait(
          own, start, contract::kEpWaitPull, own->rank, [&](int& seen) { return ep_counter(&own->pulled, tag, seen); },
          2);
  } else if constexpr (kEp & contract::kEpDirectScan) {
    if (blockIdx.x == 0) {
      wait_dispatched();
      st_release_gpu(&own->gate, tag);  // even after giving up: the others then see the error
    } else if (arrived) {
      arrived = ep_wait(
          own, start, contract::kEpWaitGate, own->rank, [&](int& seen) { return ep_counter(&own->gate, tag, seen); },
          2);
    }
  } else {
    wait_dispatched();
  }
  return arrived;
}

}  // namespace moejit
