#pragma once
// The Hopper kernel's producer (warpgroup 0 of kernel/sm90_gemm_ws_kernel.cuh): its first
// `producers` warps walk the CTA's work items and their lane 0 issues the k-blocks' TMA loads in
// turn, k-block j by warp j % producers (counted from the first tile's first k-block).
// Why several issuers: a k-block's wait on the empty barrier, expect_tx and TMA issue are one serial
// chain of ~0.2 us per issuing thread, whatever the bytes (H200, benchmarks/experiments/tma_stream.cu:
// one CTA alone streams as slowly as 128; two issuers halve the time). A 64x64 ping-pong tile's math
// per k-block is ~0.07 us, a 128x256 cooperative tile's ~0.56 us: the small tiles need 4 issuers
// (Cfg::kProducerWarps), the large ones gain little from more than 2.
// Phases: every warp's pipeline state walks the whole ring (st.advance() for the other warps'
// k-blocks). A warp's wait for stage s of k-block j needs the release of k-block j - kStages, which
// needs that k-block issued, whichever warp issued it: a barrier is never a whole phase ahead of the
// waiter (stages >= producers). Nor a whole phase behind it, as long as the consumers release the
// stages in ring order: the warp's own previous wait (k-block j - producers) saw the release of
// j - producers - kStages, and so of every k-block before it, j - 2 kStages included. The ping-pong
// consumers keep that order across their hand-over by their release gate (collective/sm90_pingpong_turns.cuh).

#include <cuda.h>

#include "cutorch_gemm/arch/sm90_tma.cuh"
#include "cutorch_gemm/collective/sm90_operand_load.cuh"
#include "cutorch_gemm/core/numeric.cuh"
#include "cutorch_gemm/scheduler/sm90_tile_scheduler.cuh"

namespace cutorch_gemm {

// One k-block, kb, of work item w (the kernel's load_stage): wait for stage st to be free, expect its bytes, load A's
// and B's boxes into it, advance st. s: the kernel's shared storage (a[], b[], full[]); kBCols: the B columns a stage
// holds (sm90_b_cols). map_a / map_b: the problem's tensor maps; tma_b: the launch's, from which SwiGLU loads both its
// gate and its up rows. rank: this CTA's rank in a 2x1 cluster, whose half of the shared B tile it multicasts to both.
// b_hint: B's loads carry L2 policy b_policy (the producer loop's streamed B: p.b_stream).
template <class Cfg, typename E, bool kAMn, bool kBMn, bool kSwiGlu, int kBCols, class Storage, class Pipe, class State>
CG_DEVICE void sm90_load_stage(Storage& s, const Pipe& pipe, const Sm90Params& p, int rank, const CUtensorMap* tma_b,
                               State& st, const Sm90Work& w, int kb, const CUtensorMap* map_a,
                               const CUtensorMap* map_b, bool b_hint, uint64_t b_policy) {
  constexpr uint32_t kStageBytes = (Cfg::kBlockM + kBCols) * Cfg::kBlockK * sizeof(E);
  const int za = p.a_3d ? w.group : 0, zb = p.b_3d ? w.group : 0;
  const int k = w.k_begin + kb * Cfg::kBlockK;
  pipe.producer_acquire(st);
  pipe.producer_commit(st, kStageBytes);
  sm90_load_operand<Cfg, E, kAMn, Cfg::kBlockM>(s.a[st.index], map_a, &s.full[st.index], w.a_row, k, za, p.a_3d);
  if constexpr (kSwiGlu) {  // gate rows, then the matching up rows F further on
    constexpr int kHalf = Cfg::kBlockN / 2;
    sm90_load_operand<Cfg, E, kBMn, kHalf>(s.b[st.index], tma_b, &s.full[st.index], w.b_col, k, zb, p.b_3d);
    sm90_load_operand<Cfg, E, kBMn, kHalf>(s.b[st.index] + kHalf * Cfg::kBlockK, tma_b, &s.full[st.index],
                                           p.args.shape.n / 2 + w.b_col, k, zb, p.b_3d);
  } else if (!Cfg::kPadB && p.cluster > 1) {  // (launch_sm90: no clusters for half tiles of partial boxes)
    // This CTA's half of the shared B tile, multicast to both CTAs (the full barrier of
    // each expects the whole stage: its own A, this half and the peer's half).
    sm90_load_operand_multicast<Cfg, E, kBMn, Cfg::kBlockN / 2>(
        s.b[st.index] + rank * (Cfg::kBlockN / 2) * Cfg::kBlockK, map_b, &s.full[st.index],
        w.b_col + rank * (Cfg::kBlockN / 2), k, zb, p.b_3d, uint16_t(0x3));
  } else if constexpr (kBCols > 256) {  // (a TMA box is at most 256 rows: the 320-wide tile's B in two halves)
    constexpr int kHalf = kBCols / 2;
    static_assert(!kBMn && kHalf <= 256, "wide tiles: a K-major B in two boxes");
    sm90_load_operand<Cfg, E, kBMn, kHalf>(s.b[st.index], map_b, &s.full[st.index], w.b_col, k, zb, p.b_3d, b_hint,
                                           b_policy);
    sm90_load_operand<Cfg, E, kBMn, kHalf>(s.b[st.index] + kHalf * Cfg::kBlockK, map_b, &s.full[st.index],
                                           w.b_col + kHalf, k, zb, p.b_3d, b_hint, b_policy);
  } else {
    sm90_load_operand<Cfg, E, kBMn, kBCols>(s.b[st.index], map_b, &s.full[st.index], w.b_col, k, zb, p.b_3d, b_hint,
                                            b_policy);
  }
  st.advance();
}

// Called by every thread of warpgroup 0 (tid_in_wg: 0..127). early: k-blocks of the first tile that
// thread 0 already issued (the kernel's early start); the other warps pass the same count. first: the
// first work item, looked up by thread 0 (the kernel's s.first_work), or nullptr.
// load_stage(st, w, kb, map_a, map_b, b_hint, b_policy): the kernel's one-k-block load.
template <class Scheduler, class State, int kStages, bool kPtrArray, class Pipe, class LoadStage>
CG_DEVICE void sm90_produce(const Sm90Params& p, const Pipe& pipe, const CUtensorMap* tma_a,
                            const CUtensorMap* tma_b, int tid_in_wg, int early, const Sm90Work* first,
                            LoadStage& load_stage) {
  const int pw = tid_in_wg / 32, producers = max_of(1, min_of(min_of(p.producers, 4), kStages));
  if (pw >= producers) return;
  Scheduler sched(p);  // a whole warp per walker: the grouped scheduler's scan is warp-wide
  State st;
  const CUtensorMap* map_a = tma_a;
  const CUtensorMap* map_b = tma_b;
  int fenced_group = -1;  // pointer-array: the problem whose maps were last made visible to TMA
  const bool b_hint = p.b_stream != 0;
  const uint64_t b_policy = b_hint ? sm90::l2_policy_evict_first() : 0;
  st.advance(early);
  int turn = early % producers;  // the warp whose turn the next k-block is (no division per k-block)
  for (int item = 0;; ++item) {
    const Sm90Work w = first && item == 0 ? sm90_uniform_work(*first) : sched.get_item(item);
    if (w.group < 0) break;
    if (tid_in_wg % 32 == 0) {
      const int kbs = Scheduler::k_blocks(w);
      if constexpr (kPtrArray) {
        map_a = p.ptr_maps + 2 * w.group;
        map_b = map_a + 1;
        if (w.group != fenced_group && kbs > 0) {
          sm90::fence_tensormap_acquire(map_a);
          sm90::fence_tensormap_acquire(map_b);
          fenced_group = w.group;
        }
      }
      for (int kb = item == 0 ? early : 0; kb < kbs; ++kb) {
        if (turn == pw) load_stage(st, w, kb, map_a, map_b, b_hint, b_policy);
        else st.advance();
        if (++turn == producers) turn = 0;
      }
    }
    __syncwarp();
  }
  // 2x1 clusters: shared memory must outlive the peer's arrives on the empty barriers (its
  // multicasts into it the consumers wait for): thread 0, whose state walked every k-block, acquires
  // every stage once more. (In place of a cluster barrier at the end, which cost the clustered
  // 1024^3 ~10%: benchmarks/RESULTS.md.)
  if (p.cluster > 1 && tid_in_wg == 0) {
    for (int i = 0; i < kStages; ++i) {
      pipe.producer_acquire(st);
      st.advance();
    }
  }
}

}  // namespace cutorch_gemm
