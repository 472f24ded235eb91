#pragma once
// The ping-pong kernels' K-split pair (kernel/sm90_gemm_ws_kernel.cuh, Sm90Params::ksplit): where every CTA has one
// tile at most, both consumer warpgroups take the CTA's tile, warpgroup c the k-blocks kb with kb % 2 == c, each into
// its own 64 x kBlockN fp32 fragment; then warpgroup 1 hands its fragment to warpgroup 0 through shared memory, and
// warpgroup 0 adds it and runs the epilogue.
//
// Why: with one tile per CTA (512x1024x4096 on 64x64 tiles: 128 tiles, 64 k-blocks each) the ping-pong kernel left
// one warpgroup idle, and one warpgroup issuing a 64x64 tile's wgmma groups alone runs at its own pace, not the tensor
// core's (no loads at all: 0.18 us per k-block against 0.065 at the tensor core's rate, H100, twenty-seventh session).
// Two warpgroups on alternating k-blocks each wait for their own groups while the other's run: H200, kernel time,
// 512x1024x4096 13.12 -> 11.14 us (cuBLAS 10.11). Only the 64-wide tiles (sm90_has_ksplit): the 64x128 loop waits for
// its loads, and there the pair only added its hand-over (benchmarks/RESULTS.md, forty-fourth session).
//
// Why the pipeline stays sound: stage s holds k-blocks s, s + kStages, ...; with kStages even they are all one
// warpgroup's, so every stage's full and empty barriers see one warpgroup, in its own order, as before. The producer
// warps' parity argument (collective/sm90_producer.cuh) needs, when a warp waits for k-block j, the release of
// j - 2 kStages: its own wait two turns before (k-block j - 2P, P producer warps) saw the release of j - 2P - kStages,
// the same warpgroup's, which releases in order; so j - 2 kStages was released if 2P <= kStages (sm90_ksplit_ok).
//
// Where the fragment goes: B's stages. Once both warpgroups passed their last wgmma wait, every stage is idle: the
// CTA's only tile has no k-block left to load. Thread t's registers 4q .. 4q + 3 sit at float4 q * 128 + t
// (consecutive threads, consecutive 16 bytes: no bank conflicts).

#include <cstdint>

#include "cutorch_gemm/arch/sm90_tma.cuh"
#include "cutorch_gemm/core/macros.h"

namespace cutorch_gemm {

// Named barriers of the hand-over (1-4 are the epilogues' and the grouped-K tail's).
constexpr int kSm90KSplitIdle = 5;   // both warpgroups past their last wgmma wait
constexpr int kSm90KSplitReady = 6;  // warpgroup 1's fragment written

// Called by both consumer warpgroups after their last wgmma wait. Returns true in warpgroup 1 (its part is done: no
// epilogue); warpgroup 0 returns with acc holding the whole sum.
template <int kRegs>
CG_DEVICE bool sm90_ksplit_pair_reduce(float (&acc)[kRegs], void* stages_b, int consumer, int tid_in_wg) {
  static_assert(kRegs % 4 == 0, "float4 groups");
  float4* scratch = static_cast<float4*>(stages_b);
  asm volatile("bar.sync %0, %1;\n" ::"r"(kSm90KSplitIdle), "r"(256) : "memory");
  if (consumer == 1) {
    sm90::fence_proxy_async_shared();  // (the stages' last accesses were TMA's writes and wgmma's reads)
#pragma unroll
    for (int q = 0; q < kRegs / 4; ++q)
      scratch[q * 128 + tid_in_wg] = make_float4(acc[4 * q], acc[4 * q + 1], acc[4 * q + 2], acc[4 * q + 3]);
    asm volatile("bar.arrive %0, %1;\n" ::"r"(kSm90KSplitReady), "r"(256) : "memory");
    return true;
  }
  asm volatile("bar.sync %0, %1;\n" ::"r"(kSm90KSplitReady), "r"(256) : "memory");
#pragma unroll
  for (int q = 0; q < kRegs / 4; ++q) {
    const float4 v = scratch[q * 128 + tid_in_wg];
    acc[4 * q] += v.x;
    acc[4 * q + 1] += v.y;
    acc[4 * q + 2] += v.z;
    acc[4 * q + 3] += v.w;
  }
  return false;
}

}  // namespace cutorch_gemm
