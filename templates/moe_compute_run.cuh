#pragma once
// The compute role's kernel body (ComputeRole, declared in moe_compute.cuh, which includes this file after the
// class): the stage ring's barriers, the wait for every rank's dispatch (kRanks > 1), the routing prologue and
// the shares, the warps' roles, and the end of a forward (the last CTA out resets the readiness counters and
// advances the epoch; on the unit schedule, the finalize grid does).

namespace moejit {

template <class Config>
__device__ void ComputeRole<Config>::run(const ComputeParams& p) {
  extern __shared__ __align__(1024) u8 smem[];
  if (threadIdx.x == 0) trace(p, contract::kTraceEntry, globaltimer());
  // The 128B swizzle atom needs 1024-byte aligned X tiles, the schedule the planned grid, and the warp's routing
  // tables a lane a route.
  if (threadIdx.x == 0 &&
      ((smem_addr(smem) & 1023u) != 0 || gridDim.x != kGrid || (kWarpTables && int(p.tokens) * kTopK + kShared > 32)))
    __trap();
  const Ring ring{smem + kSmem.x,
                  smem + kSmem.w,
                  reinterpret_cast<u32*>(smem + kSmem.xs),
                  reinterpret_cast<int*>(smem + kSmem.route),
                  reinterpret_cast<u64*>(smem + kSmem.full_w),
                  reinterpret_cast<u64*>(smem + kSmem.full_x),
                  reinterpret_cast<u64*>(smem + kSmem.empty),
                  reinterpret_cast<u64*>(smem + kSmem.decoded),
                  reinterpret_cast<float*>(smem + kSmem.wdec),
                  reinterpret_cast<float*>(smem + kSmem.xdec)};
  int* s_scratch = reinterpret_cast<int*>(smem + kSmem.scratch);
  const Workspace ws = workspace(p.ws);
  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages; ++s) {
      mbar_init(&ring.full_w[s], 1);
      mbar_init(&ring.full_x[s], 32);  // each producer lane, once its copies are issued and route ids stored
      mbar_init(&ring.empty[s], contract::stage_release_arrivals(kGroups));
      if (kDecoded) mbar_init(&ring.decoded[s], 32);
    }
    fence_barrier_init();
    const int tag = ws.header->epoch + 1;  // this forward's tag
    s_scratch[63] = tag;
    // Every rank's routes and rows of this forward, or none: a rank that never dispatches is reported.
    if constexpr (kRanks > 1) s_scratch[61] = ep_dispatches_arrived<kRanks>(ws.header, ep(p.ws), tag);
  }
  if constexpr (kRanks > 1) __syncthreads();
  int* const active = reinterpret_cast<int*>(smem + kSmem.active);
  int* const count = reinterpret_cast<int*>(smem + kSmem.count);
  int* const tile0 = reinterpret_cast<int*>(smem + kSmem.tile0);
  int* const cost0 = reinterpret_cast<int*>(smem + kSmem.cost0);
  RouteTables tables;
  if constexpr (kWarpTables)  // the planned builder only (ComputeRole::kWarpTables)
    tables = route_tables_warp<kSlots, kShared, kTileRows, Atom, kSchedule == contract::kScheduleStream>(
        LocalRoutes{p.topk_ids, int(p.tokens) * kTopK}, int(p.tokens), s_scratch, active, count, tile0, cost0);
  else
    tables = route_tables<kSlots, kShared, kTileRows, kThreads, Atom>(
        routes_of(p, kRanks == 1 || s_scratch[61] != 0), int(p.tokens),
        reinterpret_cast<unsigned*>(smem + kSmem.counts), reinterpret_cast<unsigned*>(s_scratch), active, count, tile0,
        cost0);
  Walker::template fill_shares<kThreads>(tables);
  if (threadIdx.x == 0) trace(p, contract::kTraceScheduled, globaltimer());
  const int tag = s_scratch[63];
  const Walker walker(&tables);
  const int warp = warp_uniform(threadIdx.x / 32);
  if (warp == kWeightWarp)
    weight_producer(p, ring, walker);
  else if (warp >= kActivationWarp && warp < kActivationWarp + kActWarps)
    activation_producer(p, ring, walker, ws, tables, warp - kActivationWarp);
  else if (kDecoded && warp == kDecodeWarp)
    scale_decoder(ring, walker);
  else
    consumer(p, ring, walker, ws, reinterpret_cast<float*>(smem + kSmem.amax),
             reinterpret_cast<float*>(smem + kSmem.reduce), tag);

  // The last CTA out resets the GEMM2 readiness counters and advances the epoch, so the next forward
  // (stream-ordered after this grid) starts clean. On the unit schedule the finalize grid does it (moe_finalize.cuh,
  // end_forward): there the last CTA's fences and atomic sat after the slowest CTA's last store, 2 us of a 50 us
  // forward (H100, DSV4.1-Flash B = 1: bench/results/2026-12-07-h100-s100-s102-unit-tail-and-step-cost.md).
  if constexpr (!kUnits) {
    // (The producer warps ran their loops on lane 0 alone: reconverge them for the aligned barrier.)
    __syncwarp();
    if constexpr (kRanks > 1) __threadfence_system();  // the rows written into other ranks' arenas, before `epoch`
    __syncthreads();
    // Whether this CTA is the grid's last out, to every thread by the barrier's own reduction, so no shared word
    // carries it (racecheck reported such a word's write against its reads across a __syncthreads; a minimal kernel
    // of the pattern, bench/racecheck/mbarrier_handoff.cu's `tail`, drew none on its word).
    int last = 0;
    if (threadIdx.x == 0) {
      __threadfence();
      last = atomicAdd(&ws.header->done, 1) == kGrid - 1;
    }
    if (__syncthreads_or(last)) {
      __threadfence();
      for (int i = threadIdx.x; i < tables.n_active * kKb2; i += blockDim.x) ws.ready[i] = 0;
      if (threadIdx.x == 0) {
        ws.header->done = 0;
        if constexpr (kRanks > 1)
          st_release_sys(&ws.header->epoch, ws.header->epoch + 1);  // the other ranks' finalize waits for it
        else
          ws.header->epoch = ws.header->epoch + 1;
      }
      __threadfence();
    }
  }
  if (threadIdx.x == 0) trace(p, contract::kTraceExit, globaltimer());
  griddep_launch_dependents();
}

}  // namespace moejit
