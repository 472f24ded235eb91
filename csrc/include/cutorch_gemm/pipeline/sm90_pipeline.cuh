#pragma once
// The TMA pipeline: a ring of shared-memory stages guarded by two mbarriers each. `full[s]`
// completes when stage s's bytes have landed (the producer's arrive.expect_tx plus TMA's
// complete_tx); `empty[s]` completes when every consumer thread has released stage s.
// Both sides walk the ring with a {index, phase} state.

#include "cutorch_gemm/arch/sm90_cluster.cuh"
#include "cutorch_gemm/arch/sm90_mbarrier.cuh"

namespace cutorch_gemm::sm90 {

template <int kStages>
struct PipelineState {
  int index = 0;
  uint32_t phase = 0;
  CG_DEVICE void advance() {
    if (++index == kStages) {
      index = 0;
      phase ^= 1;
    }
  }
  // Skips n stages (the ping-pong consumers skip the other warpgroup's tiles).
  CG_DEVICE void advance(int n) {
    const int i = index + n;
    phase ^= uint32_t(i / kStages) & 1u;
    index = i % kStages;
  }
};

template <int kStages>
struct TmaPipeline {
  uint64_t* full;
  uint64_t* empty;
  const int* cluster;  // CTAs per cluster (a kernel parameter: read where used, not kept in a register)

  // NOTE: a fresh barrier counts its (virtual) previous phase as complete, so the producer's
  // first pass over the ring (phase 0, waiting on parity 1) does not block.
  CG_DEVICE void producer_acquire(const PipelineState<kStages>& s) const { mbarrier_wait(&empty[s.index], s.phase ^ 1); }
  // Announces the stage's bytes; the TMA loads issued next complete the phase.
  CG_DEVICE void producer_commit(const PipelineState<kStages>& s, uint32_t bytes) const {
    mbarrier_arrive_expect_tx(&full[s.index], bytes);
  }
  CG_DEVICE void consumer_wait(const PipelineState<kStages>& s) const { mbarrier_wait(&full[s.index], s.phase); }
  // One arrive per warp (and one on the peer's barrier), after every lane's wgmma reading the
  // stage has completed (each lane waited on its wgmma groups before this).
  // NOTE: the cluster test stays inside lane 0's branch: routed through the overload below, the
  // cooperative kernel's SASS gained an instruction per release (the parameter read hoisted out).
  CG_DEVICE void consumer_release(const PipelineState<kStages>& s) const {
    __syncwarp();
    if (threadIdx.x % 32 == 0) {
      mbarrier_arrive(&empty[s.index]);
      if (*cluster > 1) mbarrier_arrive_cluster(&empty[s.index], cluster_ctarank() ^ 1u);
    }
  }
  // The same with the cluster looked up once by the caller (the lean mainloop's invariants):
  // clustered, and the peer CTA's rank.
  CG_DEVICE void consumer_release(const PipelineState<kStages>& s, bool clustered, uint32_t peer) const {
    __syncwarp();
    if (threadIdx.x % 32 == 0) {
      mbarrier_arrive(&empty[s.index]);
      if (clustered) mbarrier_arrive_cluster(&empty[s.index], peer);
    }
  }
};

}  // namespace cutorch_gemm::sm90
