#pragma once
// The Hopper kernels' promoting 8-bit mainloop over one tile's k-blocks (kernel/sm90_gemm_ws_kernel.cuh: e4m3 / e5m2
// operands without fast accumulation, Mma::kPromote): each k-block's wgmma group goes into a fresh fp32 partial tile
// that is then added to the accumulator, so the tensor core's reduced-precision accumulation never spans more than one
// k-block. The other operands take collective/sm90_lean_mainloop.cuh.

#include <cstdint>
#include <type_traits>

#include "cutorch_gemm/arch/sm90_wgmma.cuh"

namespace cutorch_gemm {

// acc = the tile's k_blocks k-blocks (the caller zeroed it), from the ring position st (advanced past them); prev:
// the last k-block's stage, which the caller releases after its final wait. The kernel's steps, shared with its other
// loops: prepare(kb, da, db) waits for k-block kb's stage (at st), zeroes a grouped-K tail and gives the stage's
// descriptors; release_gated(stage) releases a stage (after the ping-pong gate).
template <class Cfg, class Mma, bool kAMn, bool kBMn, class State, int kAccRegs, class Prepare, class Release>
CG_DEVICE void sm90_promote_mainloop(float (&acc)[kAccRegs], State& st, State& prev, int k_blocks, Prepare& prepare,
                                     Release& release_gated) {
  constexpr uint64_t kStepA = kAMn ? sm90::kDescStepK16MNMajor : sm90::kDescStepK16KMajor;
  constexpr uint64_t kStepB = kBMn ? sm90::kDescStepK16MNMajor : sm90::kDescStepK16KMajor;

  // The promoting 8-bit mainloop. Each k-block's partial tiles are read in the iteration that issued them (see
  // the NOTE on C7514 below), and the next k-block's stage is waited for and described while this one's last
  // group runs, so between a warpgroup's last wait and its next wgmma there are only the adds. (With the wait,
  // the grouped-K check and the descriptor arithmetic on that path, H100 fp8 4096^3 kept the tensor pipe 60%
  // busy: the other warpgroup's group did not cover the gap.) A k-block's stage is released (prev) once this
  // warpgroup has issued the next k-block's first group; the last one after the loop. NOTE: released right after
  // the last wait, the release (lane 0's branch, the cluster check, a volatile read of %cluster_ctarank) sat
  // between that wait and the adds, on the path to the next wgmma. H100, ncu at fixed clocks, 4096x4096xK: 35.5
  // -> 32.3 cycles per unit of K (cuBLAS 32.6), 4096^3 179.4 K -> 167.9 K cycles (cuBLAS 156.1 K),
  // 8192x14336x4096 1.151 M -> 1.074 M (1.025 M).
  uint64_t da = 0, db = 0;
  if (k_blocks > 0) prepare(0, da, db);
  for (int kb = 0; kb < k_blocks; ++kb) {
    const State cur = st;
    auto release_prev = [&] {
      if (kb > 0) release_gated(prev);  // every group that read it completed
    };
    uint64_t next_da = 0, next_db = 0;
    auto prepare_next = [&] {
      st.advance();
      if (kb + 1 < k_blocks) prepare(kb + 1, next_da, next_db);
    };
    // Cooperative: two halves of N, each: the k-block's instructions into a fresh 64-register
    // tile, wait, add it to the fp32 accumulator. The wait exposes the latency to this
    // warpgroup; the other consumer's wgmma keep the tensor core busy meanwhile.
    // One k-block's group into a fresh partial tile d (32, 48 or 64 registers: an n64, n96 or
    // n128 slice of the tile's columns), B from `b_off` (descriptor units: bytes >> 4) on.
    auto issue_part = [&](auto& d, uint64_t b_off) {
      sm90::fence_accumulators(d);
      sm90::wgmma_fence();
#pragma unroll
      for (int kk = 0; kk < Cfg::kBlockK / Mma::kInstrK; ++kk) {
        Mma::mma_part(d, da + kStepA * kk, db + b_off + kStepB * kk, kk > 0 ? 1 : 0);
      }
      sm90::wgmma_commit();
    };
    // acc[kFirst, kFirst + kRegs) += d, once d's group has completed (the caller waited).
    auto add_part = [&](auto& d, auto first) {
      constexpr int kRegs = int(sizeof(d) / sizeof(float));
      sm90::fence_accumulators(d);
#pragma unroll
      for (int r = 0; r < kRegs; ++r) acc[decltype(first)::value + r] += d[r];
    };
    // A K-major B row is 128 bytes: a slice of n columns starts n * 128 bytes on.
    constexpr auto kCols = [](int n) { return uint64_t(n * 128) >> 4; };
    using At0 = std::integral_constant<int, 0>;  // add_part's first register
    if constexpr (Cfg::kBlockN == 64) {
      // 64 columns (small M: a stream of the weight from DRAM, one warpgroup's tile per CTA
      // where tiles <= CTAs): the k-block's group, waited for before its adds. The tensor
      // core idles meanwhile; the tile's bytes, not its arithmetic, set the pace.
      float part[32];
      issue_part(part, kCols(0));
      release_prev();
      prepare_next();
      sm90::wgmma_wait<0>();
      add_part(part, At0{});
    } else if constexpr (Cfg::kPingpong) {
      // Ping-pong: one warpgroup issues wgmma at a time, so its own adds must overlap its
      // wgmma. Four n64 quarters through two 32-register tiles P, Q, straight-line within the
      // k-block (ptxas serializes every wgmma, warning C7514, when a tile is read in a later
      // loop iteration than its group's): q0 -> P, q1 -> Q, add P, q2 -> P, add Q, q3 -> Q,
      // add P, add Q; only the last add waits with nothing queued. H100, 64x8192x8192: 0.75x
      // torch._scaled_mm vs 0.645x with halves. (Cooperative tiles keep the halves: there
      // the other warpgroup's wgmma cover the adds, and quarters measured 2-8% slower.)
      float qp[32], qq[32];
      issue_part(qp, kCols(0));
      issue_part(qq, kCols(64));
      release_prev();
      sm90::wgmma_wait<1>();
      add_part(qp, At0{});
      issue_part(qp, kCols(128));
      sm90::wgmma_wait<1>();
      add_part(qq, std::integral_constant<int, 32>{});
      issue_part(qq, kCols(192));
      prepare_next();
      sm90::wgmma_wait<1>();
      add_part(qp, std::integral_constant<int, 64>{});
      sm90::wgmma_wait<0>();
      add_part(qq, std::integral_constant<int, 96>{});
    } else if constexpr (Cfg::kBlockN == 192) {
      // 192 columns: two n96 partial tiles, issued back to back; the first half's adds run
      // while the tensor core still works on the second half (one drain per k-block, not two).
      float p0[48], p1[48];
      issue_part(p0, kCols(0));
      issue_part(p1, kCols(96));
      release_prev();
      prepare_next();
      sm90::wgmma_wait<1>();
      add_part(p0, At0{});
      sm90::wgmma_wait<0>();
      add_part(p1, std::integral_constant<int, 48>{});
    } else {
      // NOTE: plain adds into the zeroed accumulator. "kb > 0 ? acc + part : part" compiled to
      // an FSEL per register besides the FADD, which lengthened each warpgroup's turn between
      // its wait and its next wgmma by 64 instructions: 0.60-0.72x torch._scaled_mm -> 0.73-0.86x
      // (H100, interleaved, six shapes; results bit-identical to torch's in fp32 out).
      float part[64];
      issue_part(part, kCols(0));
      release_prev();
      sm90::wgmma_wait<0>();
      add_part(part, At0{});
      issue_part(part, kCols(128));
      prepare_next();
      sm90::wgmma_wait<0>();
      add_part(part, std::integral_constant<int, 64>{});
    }
    prev = cur;
    da = next_da;
    db = next_db;
  }
}

}  // namespace cutorch_gemm
