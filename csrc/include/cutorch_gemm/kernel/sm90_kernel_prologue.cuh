#pragma once
// The Hopper GEMM kernel's start (kernel/sm90_gemm_ws_kernel.cuh), before its warpgroups take their roles: the
// signal to dependent launches, thread 0's barrier initialisation and descriptor prefetches, the wait for the launch
// before, the early start's first loads, and the CTA (or cluster) barrier that publishes all of it.

#include <cuda.h>

#include "cutorch_gemm/arch/sm90_cluster.cuh"
#include "cutorch_gemm/arch/sm90_grid_dependency.cuh"
#include "cutorch_gemm/arch/sm90_mbarrier.cuh"
#include "cutorch_gemm/arch/sm90_tma.cuh"
#include "cutorch_gemm/collective/sm90_pingpong_turns.cuh"
#include "cutorch_gemm/scheduler/sm90_tile_scheduler.cuh"

namespace cutorch_gemm {

// Early start (compact kernels and fit-width tiles without clusters, p.early_start): the thread that initialises the
// barriers, which is also the producer's issuing lane, loads the first k-blocks (kSm90EarlyStages) of the CTA's first
// tile right away, before the CTA barrier, the producer's register release and its scheduler call. Why: a launch with
// one tile per CTA (1024^3, 2048^3) exposes everything before its first load; the producer branch sits at the
// kernel's far end, cold in the instruction cache.
// The CTA's first work item on the fixed tile grids (kFirstShared: the compact kernels and the fit-width tiles, whose
// launches often give a CTA one tile): thread 0 looks it up before the CTA barrier, the other warps read it from
// shared memory (s.first_work). Why: each get_item call site inlines the whole lookup, and at one tile per CTA every
// copy is cold code on its warp's way to the first load or wgmma. 1024^3 on an H200 (clock64 stamps per CTA): the
// consumer spent ~1300 of the ~2450 cycles between the first stage's TMA issue and its own first wait in it.
// This returns the k-blocks of the first tile w0 that thread 0 issues before the CTA barrier (fit-width tiles: one
// tile per CTA, like the compact kernels' launches).
template <class Cfg, class Scheduler, bool kFirstShared>
__device__ __forceinline__ int sm90_early_count(const Sm90Params& p, const Sm90Work& w0) {
  if constexpr (kFirstShared) {
    if (p.cluster == 1 && p.early_start && w0.group >= 0)
      return min_of(min_of(Cfg::kStages, p.early_start), Scheduler::k_blocks(w0));
  }
  return 0;
}

// Programmatic dependent launch (arch/sm90_grid_dependency.cuh; launch_sm90 asks for it on short launches and
// small grids, device/sm90_pdl_rule.h; CUTORCH_GEMM_SM90_PDL=on|off):
// the next such kernel in the stream may place its CTAs on the SMs this grid leaves free, and on the others as this
// grid's CTAs leave them, and set up its barriers there, instead of launching only once this whole grid has completed
// (where its CTAs then land, and what that costs a grid between half and 7/8 of the SMs: device/sm90_pdl_rule.h).
// Why: at one tile per CTA (1024^3: ~6 us) the fixed cost between two launches is a sixth of the time. Every CTA
// signals at once: the dependents still wait for this grid's completion (grid_dependency_wait) before they touch
// memory, and a CTA of ours takes a whole SM's registers, so none can land beside a running one. This grid in turn
// touches no global memory before its own wait: thread 0 waits after initialising the barriers and prefetching the
// parameter-space descriptors, before the first work item's lookup and loads; every other thread before the CTA
// barrier (no thread reads or writes global memory before it, and none returns early).
// Returns the early start's k-block count on thread 0 (sm90_early_count), 0 elsewhere.
template <class Cfg, class Scheduler, class State, bool kFirstShared, bool kCLoads, bool kPtrArray, class Storage,
          class LoadStage>
__device__ __forceinline__ int sm90_kernel_prologue(Storage& s, const Sm90Params& p, const CUtensorMap* tma_a,
                                                    const CUtensorMap* tma_b, const CUtensorMap* tma_d,
                                                    LoadStage& load_stage) {
  int early = 0;
  sm90::launch_dependents();
  if (threadIdx.x == 0) {
    for (int i = 0; i < Cfg::kStages; ++i) {
      sm90::mbarrier_init(&s.full[i], 1);
      // One arrive per consumer warp that reads the stage (cooperative: both warpgroups';
      // ping-pong: one's), from each CTA of the cluster.
      sm90::mbarrier_init(&s.empty[i], (Cfg::kPingpong ? 4 : 4 * Cfg::kConsumers) * p.cluster);
    }
    if constexpr (Cfg::kPingpong) Sm90PingpongTurns::init(s.order);
    if (kCLoads && p.tma_load_c) {
      for (int i = 0; i < Cfg::kConsumers * Cfg::kEpiBuffers; ++i) sm90::mbarrier_init(&s.c_full[0][0] + i, 1);
      for (int i = 0; i < Cfg::kConsumers * 4; ++i) (&s.c_phase[0][0])[i] = 0u;
    }
    sm90::mbarrier_init_fence();
    if (!kPtrArray) {
      sm90::tma_prefetch_descriptor(tma_a);
      sm90::tma_prefetch_descriptor(tma_b);
    }
    sm90::grid_dependency_wait();
    Sm90Work w0{};
    if constexpr (kFirstShared) {
      w0 = Scheduler(p).get_item(0);
      s.first_work = w0;
    }
    early = sm90_early_count<Cfg, Scheduler, kFirstShared>(p, w0);
    State st0;
    for (int kb = 0; kb < early; ++kb) load_stage(st0, w0, kb, tma_a, tma_b);
    if (p.tma_store) sm90::tma_prefetch_descriptor(tma_d);
  }
  if (threadIdx.x != 0) sm90::grid_dependency_wait();
  // The peer's barriers must be initialised before this CTA's multicasts and arrives reach them.
  // (relaxed: fence.mbarrier_init published the initialisation; the default form adds MEMBAR.ALL.GPU)
  // (clustered: the CTA barrier publishes s.first_work, which the relaxed cluster barrier does not order)
  if (p.cluster > 1) {
    if constexpr (kFirstShared) __syncthreads();
    sm90::cluster_sync_relaxed();
  } else {
    __syncthreads();
  }
  return early;
}

}  // namespace cutorch_gemm
