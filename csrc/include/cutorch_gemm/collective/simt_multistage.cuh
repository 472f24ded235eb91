#pragma once
// SIMT multistage mainloop for fp32 / fp64 (seeds: a ring of shared-memory stages fed by
// asynchronous copies). Operand tiles go global -> shared with cp.async, no staging registers,
// kStages deep, so copies for tile k+kStages-1 are in flight while tile k is multiplied; the
// registers freed from staging let the compiler prefetch the next k-step's fragments.
//
// Shared-memory layout and the thread arrangement are those of SimtTileIterator: K-outer tiles
// smem[k][mn], K-major operands transposed by element-wise copies, MN-major operands copied as
// 16-byte vectors when the stride, alignment and bounds allow.

#include "cutorch_gemm/arch/sm80_cp_async.cuh"
#include "cutorch_gemm/collective/simt_mainloop.cuh"

namespace cutorch_gemm {

template <typename T, int kTileMN, int kTileK, int kThreads, bool kContigK>
struct SimtAsyncTileIterator {
  static constexpr int kPad = 4;
  static constexpr int kPitch = kTileMN + kPad;
  static constexpr int kElemsPerThread = kTileMN * kTileK / kThreads;
  static constexpr int kVec = kElemsPerThread < 4 ? kElemsPerThread : 4;
  static constexpr int kIters = kElemsPerThread / kVec;
  static constexpr int kVecsAlongContig = (kContigK ? kTileK : kTileMN) / kVec;
  static constexpr int kChunk = kVec * int(sizeof(T)) < 16 ? kVec * int(sizeof(T)) : 16;  // bytes per cp.async
  static_assert(kElemsPerThread >= 1 && kElemsPerThread % kVec == 0, "tile must split evenly over threads");

  using SmemTile = T[kTileK][kPitch];

  const T* origin;      // the operand's (0, 0): a valid address for zero-filling copies
  const T* ptr[kIters];
  int mn[kIters];
  int k[kIters];

  CG_DEVICE static void coords(int tid, int it, int& mn_in_tile, int& k_in_tile) {
    const int v = tid + it * kThreads;
    const int contig = (v % kVecsAlongContig) * kVec;
    const int strided = v / kVecsAlongContig;
    mn_in_tile = kContigK ? strided : contig;
    k_in_tile = kContigK ? contig : strided;
  }

  CG_DEVICE SimtAsyncTileIterator(const T* base, index_t s_mn, index_t s_k, int tid, int mn0, int k0)
      : origin(base) {
#pragma unroll
    for (int it = 0; it < kIters; ++it) {
      coords(tid, it, mn[it], k[it]);
      mn[it] += mn0;
      k[it] += k0;
      ptr[it] = base + index_t(mn[it]) * s_mn + index_t(k[it]) * s_k;
    }
  }

  CG_DEVICE void advance(index_t s_k) {
#pragma unroll
    for (int it = 0; it < kIters; ++it) {
      ptr[it] += index_t(kTileK) * s_k;
      k[it] += kTileK;
    }
  }

  // Issues this thread's copies of the current k-tile into `smem` (not committed).
  CG_DEVICE void copy(SmemTile& smem, int tid, index_t s_mn, index_t s_k, int mn_end, int k_end) const {
#pragma unroll
    for (int it = 0; it < kIters; ++it) {
      int tmn, tk;
      coords(tid, it, tmn, tk);
      const bool in_strided = kContigK ? (mn[it] < mn_end) : (k[it] < k_end);
      const int contig_left = kContigK ? (k_end - k[it]) : (mn_end - mn[it]);
      const index_t contig_stride = kContigK ? s_k : s_mn;
      if (!kContigK && in_strided && contig_left >= kVec && contig_stride == 1 && is_aligned<T, kVec>(ptr[it])) {
        // MN-major: whole vectors, copied in 16-byte (or smaller) chunks without transposing.
        constexpr int kPerChunk = kChunk / int(sizeof(T));
#pragma unroll
        for (int c = 0; c < kVec; c += kPerChunk) cp_async<kChunk>(&smem[tk][tmn + c], ptr[it] + c, true);
      } else {
#pragma unroll
        for (int j = 0; j < kVec; ++j) {
          const bool ok = in_strided && j < contig_left;
          T* dst = kContigK ? &smem[tk + j][tmn] : &smem[tk][tmn + j];  // K-major: transposed
          cp_async<int(sizeof(T))>(dst, ok ? ptr[it] + index_t(j) * contig_stride : origin, ok);
        }
      }
    }
  }
};

template <class Cfg, typename T, bool kAContigK, bool kBContigK>
struct SimtMultistageMainloop : SimtWarpMma<Cfg, T> {
  static_assert(sizeof(T) >= 4, "cp.async cannot convert: 16-bit inputs use SimtMainloop");
  static constexpr int kStages = Cfg::kStages;
  static_assert(kStages >= 2, "a ring needs at least two stages");
  using Acc = T;
  using Base = SimtWarpMma<Cfg, Acc>;
  using typename Base::Accumulators;
  using typename Base::ThreadCoords;
  using IterA = SimtAsyncTileIterator<T, Cfg::kBlockM, Cfg::kBlockK, Cfg::kThreads, kAContigK>;
  using IterB = SimtAsyncTileIterator<T, Cfg::kBlockN, Cfg::kBlockK, Cfg::kThreads, kBContigK>;

  struct SharedStorage {
    alignas(32) typename IterA::SmemTile a[kStages];
    alignas(32) typename IterB::SmemTile b[kStages];
  };

  CG_DEVICE static void run(SharedStorage& smem, const T* a, index_t a_sm, index_t a_sk,
                            const T* b, index_t b_sk, index_t b_sn, int m0, int m_end, int n0,
                            int n_end, int k_begin, int k_end, int tid, const ThreadCoords& t,
                            Accumulators& acc) {
#pragma unroll
    for (int i = 0; i < Cfg::kThreadM; ++i)
#pragma unroll
      for (int j = 0; j < Cfg::kThreadN; ++j) acc[i][j] = Acc(0);
    if (k_begin >= k_end) return;

    IterA ia(a, a_sm, a_sk, tid, m0, k_begin);
    IterB ib(b, b_sn, b_sk, tid, n0, k_begin);
    const int k_tiles = ceil_div(k_end - k_begin, Cfg::kBlockK);

    // Prologue: the first kStages-1 tiles in flight (one commit group each, empty or not, so
    // the wait count below stays uniform).
#pragma unroll
    for (int s = 0; s < kStages - 1; ++s) {
      if (s < k_tiles) {
        ia.copy(smem.a[s], tid, a_sm, a_sk, m_end, k_end);
        ib.copy(smem.b[s], tid, b_sn, b_sk, n_end, k_end);
        ia.advance(a_sk);
        ib.advance(b_sk);
      }
      cp_async_commit();
    }

    for (int kt = 0; kt < k_tiles; ++kt) {
      cp_async_wait<kStages - 2>();  // tile kt has landed (this thread's copies)...
      __syncthreads();               // ...and everyone's; also, nobody still reads stage kt-1
      const int next = kt + kStages - 1;
      if (next < k_tiles) {  // refill the stage that tile kt-1 used
        ia.copy(smem.a[next % kStages], tid, a_sm, a_sk, m_end, k_end);
        ib.copy(smem.b[next % kStages], tid, b_sn, b_sk, n_end, k_end);
        ia.advance(a_sk);
        ib.advance(b_sk);
      }
      cp_async_commit();
      Base::warp_mma(smem.a[kt % kStages], smem.b[kt % kStages], t, acc);
    }
    cp_async_wait<0>();  // no copy may outlive the CTA's use of shared memory
  }
};

}  // namespace cutorch_gemm
