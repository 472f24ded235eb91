#pragma once
// SIMT collective mainloop: the K loop for one threadblock tile (seeds: threadblock-level GEMM
// fed by global load streams, warp-level GEMM from shared memory, thread-level FMA).
//
// Double-buffered: while the CTA multiplies the tile in shared-memory stage s, each thread
// holds the next tile's slice in registers (SimtTileIterator::frag) and writes it to stage
// s^1 afterwards; one __syncthreads per k-tile.

#include "cutorch_gemm/collective/simt_tile_iterator.cuh"
#include "cutorch_gemm/device/simt_configs.h"

namespace cutorch_gemm {

// Warp- and thread-level part shared by the SIMT mainloops: where a thread's accumulators sit in
// the CTA tile, and the rank-1 updates over one shared-memory stage.
template <class Cfg, typename Acc>
struct SimtWarpMma {
  // The thread's accumulator fragment: element (i, j) is row
  //   warp_m0 + (i / 4) * kSubStrideM + lane_m * 4 + i % 4
  // of the CTA tile, and likewise for columns (see thread_row / thread_col).
  using Accumulators = Acc[Cfg::kThreadM][Cfg::kThreadN];

  struct ThreadCoords {
    int warp_m0;  // first tile row of this thread's warp
    int warp_n0;
    int lane_m;   // lane position within the warp's 8 x 4 arrangement
    int lane_n;
  };

  // NOTE: ids come from the kernel (programming guidelines: components do not read threadIdx).
  CG_DEVICE static ThreadCoords thread_coords(int warp_id, int lane_id) {
    return ThreadCoords{(warp_id / Cfg::kWarpsN) * Cfg::kWarpTileM,
                        (warp_id % Cfg::kWarpsN) * Cfg::kWarpTileN,
                        lane_id / Cfg::kLanesN, lane_id % Cfg::kLanesN};
  }
  CG_DEVICE static int thread_row(const ThreadCoords& t, int i) {
    return t.warp_m0 + (i / 4) * Cfg::kSubStrideM + t.lane_m * 4 + i % 4;
  }
  CG_DEVICE static int thread_col(const ThreadCoords& t, int j) {
    return t.warp_n0 + (j / 4) * Cfg::kSubStrideN + t.lane_n * 4 + j % 4;
  }

  // Warp-level product of one shared-memory stage: kBlockK rank-1 updates of the thread tile.
  template <class SmemA, class SmemB>
  CG_DEVICE static void warp_mma(const SmemA& sa, const SmemB& sb,
                                 const ThreadCoords& t, Accumulators& acc) {
#pragma unroll
    for (int kk = 0; kk < Cfg::kBlockK; ++kk) {
      Acc fa[Cfg::kThreadM];
      Acc fb[Cfg::kThreadN];
#pragma unroll
      for (int s = 0; s < Cfg::kSubM; ++s) {
        const auto x = *reinterpret_cast<const Vec<Acc, 4>*>(
            &sa[kk][t.warp_m0 + s * Cfg::kSubStrideM + t.lane_m * 4]);
#pragma unroll
        for (int e = 0; e < 4; ++e) fa[s * 4 + e] = x.v[e];
      }
#pragma unroll
      for (int s = 0; s < Cfg::kSubN; ++s) {
        const auto x = *reinterpret_cast<const Vec<Acc, 4>*>(
            &sb[kk][t.warp_n0 + s * Cfg::kSubStrideN + t.lane_n * 4]);
#pragma unroll
        for (int e = 0; e < 4; ++e) fb[s * 4 + e] = x.v[e];
      }
#pragma unroll
      for (int i = 0; i < Cfg::kThreadM; ++i)
#pragma unroll
        for (int j = 0; j < Cfg::kThreadN; ++j) acc[i][j] = fma(fa[i], fb[j], acc[i][j]);
    }
  }

};

// Register-staged double buffer.
// NOTE: a 4-stage cp.async ring for fp32 measured slower (29.5 vs 39.3 TFLOP/s at 4096^3 on an
// H200): the K-major operands are transposed into shared memory, which takes one 4-byte
// cp.async per element, against one 16-byte load and four shared stores here.
template <class Cfg, typename T, bool kAContigK, bool kBContigK>
struct SimtMainloop : SimtWarpMma<Cfg, typename AccumulatorFor<T>::type> {
  using Acc = typename AccumulatorFor<T>::type;
  using Base = SimtWarpMma<Cfg, Acc>;
  using typename Base::Accumulators;
  using typename Base::ThreadCoords;
  using IterA = SimtTileIterator<T, Acc, Cfg::kBlockM, Cfg::kBlockK, Cfg::kThreads, kAContigK>;
  using IterB = SimtTileIterator<T, Acc, Cfg::kBlockN, Cfg::kBlockK, Cfg::kThreads, kBContigK>;

  struct SharedStorage {
    alignas(32) typename IterA::SmemTile a[2];
    alignas(32) typename IterB::SmemTile b[2];
  };

  // Accumulates A[m0:, k_begin:k_end] x B[k_begin:k_end, n0:] into acc.
  // a / b point at the problem's operand origins; m_end / n_end are the problem extents.
  CG_DEVICE static void run(SharedStorage& smem, const T* a, index_t a_sm, index_t a_sk,
                            const T* b, index_t b_sk, index_t b_sn, int m0, int m_end, int n0,
                            int n_end, int k_begin, int k_end, int tid, const ThreadCoords& t,
                            Accumulators& acc) {
#pragma unroll
    for (int i = 0; i < Cfg::kThreadM; ++i)
#pragma unroll
      for (int j = 0; j < Cfg::kThreadN; ++j) acc[i][j] = Acc(0);
    if (k_begin >= k_end) return;
    // NOTE: interior tiles with whole k-tiles and aligned operands (the common case) run a loop
    // without bounds checks or scalar fallbacks: fewer instructions and branches per k-tile.
    const bool unguarded = (k_end - k_begin) % Cfg::kBlockK == 0 &&
                           IterA::all_vectors_ok(a, a_sm, a_sk, m0, m_end, k_begin) &&
                           IterB::all_vectors_ok(b, b_sn, b_sk, n0, n_end, k_begin);
    if (unguarded) {
      loop<false>(smem, a, a_sm, a_sk, b, b_sk, b_sn, m0, m_end, n0, n_end, k_begin, k_end, tid, t, acc);
    } else {
      loop<true>(smem, a, a_sm, a_sk, b, b_sk, b_sn, m0, m_end, n0, n_end, k_begin, k_end, tid, t, acc);
    }
  }

  template <bool kGuarded>
  CG_DEVICE static void loop(SharedStorage& smem, const T* a, index_t a_sm, index_t a_sk,
                             const T* b, index_t b_sk, index_t b_sn, int m0, int m_end, int n0,
                             int n_end, int k_begin, int k_end, int tid, const ThreadCoords& t,
                             Accumulators& acc) {
    IterA ia(a, a_sm, a_sk, tid, m0, k_begin);
    IterB ib(b, b_sn, b_sk, tid, n0, k_begin);
    ia.template load<kGuarded>(a_sm, a_sk, m_end, k_end);
    ib.template load<kGuarded>(b_sn, b_sk, n_end, k_end);
    ia.store(smem.a[0], tid);
    ib.store(smem.b[0], tid);
    __syncthreads();

    int stage = 0;
    for (int k0 = k_begin; k0 < k_end; k0 += Cfg::kBlockK) {
      const bool has_next = k0 + Cfg::kBlockK < k_end;
      if (has_next) {  // global loads in flight while the FMAs below run
        ia.advance(a_sk);
        ib.advance(b_sk);
        ia.template load<kGuarded>(a_sm, a_sk, m_end, k_end);
        ib.template load<kGuarded>(b_sn, b_sk, n_end, k_end);
      }
      Base::warp_mma(smem.a[stage], smem.b[stage], t, acc);
      if (has_next) {
        ia.store(smem.a[stage ^ 1], tid);
        ib.store(smem.b[stage ^ 1], tid);
      }
      __syncthreads();
      stage ^= 1;
    }
  }
};

}  // namespace cutorch_gemm
