#pragma once
// The Hopper kernels' mainloop over one tile's k-blocks (kernel/sm90_gemm_ws_kernel.cuh: 16-bit, tf32 and
// fp8 fast-accumulation operands, ping-pong and cooperative, every k-block but a grouped-K tail's last; not the
// promoting fp8 loop, SwiGLU's or the pointer-array kernels): per k-block only the full-barrier wait, the wgmma
// group, the wait for the previous group and that stage's release.
//
// Why a loop of its own: one warpgroup issues every group of a ping-pong tile, so the loop's own
// latency is the tensor core's idle time. The general loop recomputed per k-block the stage's
// descriptors, the k-block count, the grouped-K tail test and the cluster parameter (a constant
// load and an S2R of the CTA's rank in the release). H100, kernel time with the producer only
// arriving (no loads at all): the 64x64 tiles at 512x1024x4096 16.1 -> 11.6 us, 0.25 -> 0.18 us
// per k-block of four m64n64k16 (0.065 us at the tensor core's rate); 64x128 tiles 16.9 -> 13.2
// us. With the loads: 1024^3 (64x128) 7.94 -> 7.36 us, 512^3 (64x64) 5.44 -> 4.90, 256x1024x1024
// 7.52 -> 6.43; the 64x256 tiles unchanged. (cuBLAS's 64x64 loop: four HGMMA, one arrive, one
// try_wait per k-block.) The cooperative kernels took it later (thirty-second session): ~56 instructions
// per consumer warp and k-block of the 128x256 tile instead of ~79, about 1% faster at the dense
// suite's shapes (the kernel's note).

#include <cstdint>
#include <type_traits>

#include "cutorch_gemm/arch/sm90_cluster.cuh"
#include "cutorch_gemm/arch/sm90_wgmma.cuh"

namespace cutorch_gemm {

// The default hook: nothing to do under the groups (the kernels without a deferred store).
struct Sm90NoHook {
  CG_DEVICE void operator()() const {}
};

// acc = the tile's k_blocks k-blocks, from the ring position st (advanced past them); prev: the
// last k-block's stage, which the caller releases after its final wait. Stage i's descriptors are
// stage 0's plus i stages (shared-memory addresses fit the descriptor's 14-bit field). row_in_tile:
// the warpgroup's first row of the A tile; cluster: CTAs per cluster (2: each release also arrives
// on the peer's empty barrier, whose multicasts fill this stage too). hook: called under each of the
// first hook_blocks k-blocks' groups (the cooperative kernels' deferred store: one slice of the
// previous tile's D each), in a loop of its own so the rest of the k-blocks do not test for it.
// gate: called before each release (the ping-pong kernels' release gate, collective/sm90_pingpong_turns.cuh:
// it waits before the tile's first release only). stride: ring positions per k-block (2: the K-split pair's
// warpgroups take every other k-block, collective/sm90_ksplit_pair.cuh). NOTE: a test per k-block rather than the
// first two k-blocks peeled off the loop: the peeled copies would be cold code in a launch of one tile per CTA,
// fetched before the loop's own copy (the compact kernels' note on instruction fetch).
template <class Cfg, class Mma, bool kAMn, bool kBMn, class Storage, class Pipeline, class State, int kRegs,
          class Hook = Sm90NoHook, class Gate = Sm90NoHook>
CG_DEVICE void sm90_lean_mainloop(Storage& s, const Pipeline& pipe, float (&acc)[kRegs], State& st, State& prev,
                                  int k_blocks, int row_in_tile, int cluster, int hook_blocks = 0,
                                  Hook hook = Hook{}, Gate gate = Gate{}, int stride = 1) {
  constexpr uint64_t kStepA = kAMn ? sm90::kDescStepK16MNMajor : sm90::kDescStepK16KMajor;
  constexpr uint64_t kStepB = kBMn ? sm90::kDescStepK16MNMajor : sm90::kDescStepK16KMajor;
  constexpr uint64_t kStageA = sizeof(s.a[0]) >> 4, kStageB = sizeof(s.b[0]) >> 4;
  const uint64_t da0 = kAMn ? sm90::make_desc_mn_major_sw128(s.a[0] + row_in_tile * Cfg::kBlockK, Cfg::kBlockK)
                            : sm90::make_desc_k_major_sw128(s.a[0] + row_in_tile * Cfg::kBlockK);
  const uint64_t db0 = kBMn ? sm90::make_desc_mn_major_sw128(s.b[0], Cfg::kBlockK)
                            : sm90::make_desc_k_major_sw128(s.b[0]);
  const bool clustered = cluster > 1;
  const uint32_t peer = clustered ? (sm90::cluster_ctarank() ^ 1u) : 0u;
  int scale = 0;  // the first group overwrites the accumulator
  auto k_block = [&](auto with_hook) {
    pipe.consumer_wait(st);
    const uint64_t da = da0 + uint64_t(st.index) * kStageA, db = db0 + uint64_t(st.index) * kStageB;
    sm90::fence_accumulators(acc);
    sm90::wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < Cfg::kBlockK / Mma::kInstrK; ++kk) {
      Mma::template mma<kAMn, kBMn>(acc, da + kStepA * kk, db + kStepB * kk, kk > 0 ? 1 : scale);
    }
    sm90::wgmma_commit();
    if constexpr (decltype(with_hook)::value) hook();
    sm90::fence_accumulators(acc);
    sm90::wgmma_wait<1>();  // the previous k-block's group is done: release its stage
    if (scale) {
      gate();
      pipe.consumer_release(prev, clustered, peer);
    }
    scale = 1;
    prev = st;
    st.advance();
    if (stride == 2) st.advance();
  };
  int left = k_blocks;
  if constexpr (!std::is_same_v<Hook, Sm90NoHook>) {
    for (int h = min_of(hook_blocks, left); h > 0; --h, --left) k_block(std::true_type{});
  }
  for (; left > 0; --left) k_block(std::false_type{});
}

}  // namespace cutorch_gemm
