#pragma once
// The Ampere-class GEMM kernel (sm_80+; also the tf32 / fp64 path on Hopper and the fallback
// for operands TMA cannot read): rasterized CTA tile -> problem (batch entry or group) -> K
// range (split-K slice) -> multistage cp.async / ldmatrix / mma.sync mainloop -> epilogue
// through shared memory (fused store, serial split-K turn, or parallel split-K partial, which
// the slices may then sum themselves: Epilogue::reduce_band).

#include <type_traits>

#include "cutorch_gemm/collective/sm80_mainloop.cuh"
#include "cutorch_gemm/epilogue/sm80_epilogue.cuh"
#include "cutorch_gemm/scheduler/raster.h"
#include "cutorch_gemm/scheduler/split_k.h"

namespace cutorch_gemm {

template <class Cfg, typename T, bool kAMn, bool kBMn>
__global__ void __launch_bounds__(Cfg::kThreads, 1) sm80_gemm_kernel(const Sm80Params p) {
  using Mainloop = sm80::Mainloop<Cfg, T, kAMn, kBMn>;
  using Epilogue = sm80::Epilogue<Cfg, Mainloop>;
  extern __shared__ __align__(128) char smem[];

  const GemmArgs& g = p.args;
  const TileCoord tile = raster_tile(blockIdx.x, p.tiles_m, p.tiles_n, p.raster_group);
  const int m0 = tile.m * Cfg::kBlockM;
  const int n0 = tile.n * Cfg::kBlockN;
  const int z = p.z_base + blockIdx.z;
  const Problem prob = resolve_problem(g.shape, z);
  // NOTE: uniform across the CTA and across the split-K slices of a tile (no slice of a
  // skipped tile waits on a semaphore).
  if (m0 >= prob.m || n0 >= prob.n) return;

  const KRange kr = slice_k_range(prob.k_begin, prob.k_end, Cfg::kBlockK, p.splits, blockIdx.y);
  // Sliced K: each group of warps takes its share of the slice, with its own ring.
  const int group = Cfg::kSlicesK == 1 ? 0 : int(threadIdx.x) / Cfg::kGroupThreads;
  const KRange gr = slice_k_range(kr.begin, kr.end, Cfg::kBlockK, Cfg::kSlicesK, group);
  const int k_begin = gr.begin;
  const int k_end = gr.end;
  const T* a = static_cast<const T*>(g.a) + prob.a_off + index_t(m0) * g.shape.a_sm + index_t(k_begin) * g.shape.a_sk;
  const T* b = static_cast<const T*>(g.b) + prob.b_off + index_t(k_begin) * g.shape.b_sk + index_t(n0) * g.shape.b_sn;

  typename Mainloop::Accumulators acc;
  Mainloop::run(smem + group * Cfg::kRingBytes, a, g.shape.a_sm, g.shape.a_sk, b, g.shape.b_sk, g.shape.b_sn,
                prob.m - m0, prob.n - n0, k_end - k_begin, acc, p.l2_hint);
  if constexpr (Cfg::kSlicesK > 1) {
    // NOTE: a no-op for the hardware (each group's named barrier counts only its own threads).
    // It is for compute-sanitizer's racecheck: when one group had run one ring barrier fewer
    // than the other (an odd k-tile count), racecheck reported the epilogue's group turns in
    // shared memory as races (H100, 768-4608 hazards per site; results exact and deterministic);
    // with the shorter group padding its barrier count to the longest's it reports none.
    int most = 0;
#pragma unroll
    for (int g2 = 0; g2 < Cfg::kSlicesK; ++g2) {
      const KRange r = slice_k_range(kr.begin, kr.end, Cfg::kBlockK, Cfg::kSlicesK, g2);
      most = max_of(most, Mainloop::ring_syncs(r.end - r.begin));
    }
    for (int i = Mainloop::ring_syncs(k_end - k_begin); i < most; ++i) Mainloop::sync_ring();
  }

  Epilogue::stage(smem, acc);
  if (p.split_mode == SplitKMode::kSerial && p.splits > 1) {
    const index_t slot = index_t(z) * p.tiles_m * p.tiles_n + blockIdx.x;
    if (!Epilogue::serial_turn(smem, p, slot, blockIdx.y)) return;
  }
  Epilogue::store(smem, p, prob, z, m0, n0);
  if constexpr (!std::is_same_v<T, int8_t>) {  // (int8 plans never split)
    if (p.fused_reduce) {
      const index_t slot = index_t(z) * p.tiles_m * p.tiles_n + blockIdx.x;
      Epilogue::reduce_band(smem, p, prob, z, m0, n0, slot, blockIdx.y);
    }
  }
}

}  // namespace cutorch_gemm
