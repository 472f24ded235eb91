#pragma once
// The ping-pong consumers' hand-over (kernel/sm90_gemm_ws_kernel.cuh): the two consumer warpgroups take
// alternate tiles of the CTA's sequence from one stage ring, so their mainloops must take turns, and so
// must their stage releases at each turn. Four barriers in shared memory (Sm90SharedStorage::order):
//   order[c]      one arrive (thread 0): consumer c has issued its tile's last wgmma group;
//   order[2 + c]  four arrives (lane 0 of each warp): consumer c has released its tile's last stage.
//
// Turns (order[c]): a warpgroup starts a tile only after the other has passed every full-barrier wait of
// the tile before it in the ring. Besides staggering the epilogues against the other's wgmma, this keeps
// every parity wait within one phase of its barrier: with K >= kStages slices, the second warpgroup's first
// wait would otherwise see the barrier's initial "previous phase complete" and read early.
//
// The release gate (order[2 + c]): a warpgroup's first stage release in a tile waits until every warp of
// the other released the last stage of its tile. Why: the turn above is handed over while the other's last
// wgmma group still runs and its stage is unreleased. Without the gate this warpgroup's releases could
// overtake that one; a producer warp waiting on the empty barrier for k-block j (the release of
// j - kStages) then found the barrier a whole phase behind (j - 2 kStages unreleased), which its parity
// wait reads as complete, and loaded over a stage still in use. The pointer-array kernel (64x256, 5 stages,
// 2 producer warps) faulted that way within ~20-400 calls (H200, thirty-fourth session; clean with one
// producer warp, whose own previous wait implies that release; benchmarks/RESULTS.md). The producers'
// invariant (collective/sm90_producer.cuh) needs the releases in ring order. The wait comes after the
// tile's second wgmma group is issued, so the tensor core does not wait on it.

#include <cstdint>

#include "cutorch_gemm/arch/sm90_mbarrier.cuh"

namespace cutorch_gemm {

struct Sm90PingpongTurns {
  uint64_t* order;   // the four barriers above
  int consumer;      // this warpgroup: 0 or 1
  uint32_t parity = 0;  // the other's phase this tile waits for (turn and gate alike)
  bool gate = false;    // the gate's wait is still due in this tile

  // Thread 0, before the CTA barrier.
  CG_DEVICE static void init(uint64_t* order) {
    sm90::mbarrier_init(&order[0], 1);
    sm90::mbarrier_init(&order[1], 1);
    sm90::mbarrier_init(&order[2], 4);
    sm90::mbarrier_init(&order[3], 4);
  }

  // Every thread, before the warpgroup's own-th tile (0, 1, ...): its turn. gate_on: false only for the
  // CUTORCH_GEMM_SM90_PP_GATE=off repro (Sm90Params::pp_gate_off).
  CG_DEVICE void begin_tile(int own, bool gate_on) {
    const bool follows = consumer == 1 || own > 0;  // (consumer 0's first tile follows nothing)
    parity = consumer == 0 ? uint32_t(own - 1) & 1u : uint32_t(own) & 1u;
    if (follows) sm90::mbarrier_wait(&order[1 - consumer], parity);
    gate = follows && gate_on;
  }
  // Every thread, before each stage release (waits before the tile's first only).
  CG_DEVICE void before_release() {
    if (gate) {
      sm90::mbarrier_wait(&order[3 - consumer], parity);
      gate = false;
    }
  }
  // After the tile's last wgmma group is issued: the other's turn.
  CG_DEVICE void pass_turn(int tid_in_wg) const {
    if (tid_in_wg == 0) sm90::mbarrier_arrive(&order[consumer]);
  }
  // After the tile's last stage release (also for a tile without k-blocks): the other's gate.
  CG_DEVICE void open_gate(int tid_in_wg) const {
    if (tid_in_wg % 32 == 0) sm90::mbarrier_arrive(&order[2 + consumer]);
  }
};

}  // namespace cutorch_gemm
