#pragma once
// Global -> register -> shared tile iterator for one SIMT operand tile of kTileMN x kTileK
// elements (the A tile is BlockM x BlockK, the B tile BlockN x BlockK).
//
// kContigK selects the thread arrangement: threads walk the operand's contiguous dimension,
// K for a K-major operand (A row-major, B column-major), MN otherwise, so each thread can
// issue one vector load of kVec elements. Loads are predicated: an element outside
// [mn, mn_end) x [k, k_end) reads as zero, and the vector path is taken only when the whole
// vector is in bounds, the contiguous stride is 1 and the address is aligned; otherwise the
// thread falls back to scalar loads (a padded leading dimension, an odd K, a sliced column or
// a fully strided view all still work, without a copy).
//
// Shared memory holds the tile K-outer: smem[k][mn] in the accumulator type, so the warp-level
// product reads 4 consecutive mn values with one vector load. Rows are padded by kPad elements
// so the transposing stores of K-major operands do not conflict on banks.

#include "cutorch_gemm/core/numeric.cuh"

namespace cutorch_gemm {

template <typename T, typename Acc, int kTileMN, int kTileK, int kThreads, bool kContigK>
struct SimtTileIterator {
  static constexpr int kPad = 4;
  static constexpr int kPitch = kTileMN + kPad;                   // smem row pitch (elements)
  static constexpr int kElemsPerThread = kTileMN * kTileK / kThreads;
  static constexpr int kVec = kElemsPerThread < 4 ? kElemsPerThread : 4;
  static constexpr int kIters = kElemsPerThread / kVec;
  static constexpr int kVecsAlongContig = (kContigK ? kTileK : kTileMN) / kVec;
  static_assert(kElemsPerThread >= 1 && kElemsPerThread % kVec == 0, "tile must split evenly over threads");
  static_assert((kContigK ? kTileK : kTileMN) % kVec == 0, "contiguous extent must hold whole vectors");

  using SmemTile = Acc[kTileK][kPitch];

  // The staged tile slice between the global load and the smem store, kept in the storage
  // type: half the registers for 16-bit inputs, and the conversion (which waits on the load)
  // happens only at the store, after the FMAs of the current tile.
  Vec<T, kVec> frag[kIters];
  const T* ptr[kIters];     // address of each vector of this thread in the current k-tile
  int mn[kIters];           // its absolute MN coordinate (fixed)
  int k[kIters];            // its absolute K coordinate (advances by kTileK)

  // Coordinates (within the tile) of this thread's iteration `it`: first element of the vector.
  CG_DEVICE static void coords(int tid, int it, int& mn_in_tile, int& k_in_tile) {
    const int v = tid + it * kThreads;
    const int contig = (v % kVecsAlongContig) * kVec;
    const int strided = v / kVecsAlongContig;
    mn_in_tile = kContigK ? strided : contig;
    k_in_tile = kContigK ? contig : strided;
  }

  // base points at the operand's (0, 0); s_mn / s_k are its strides along MN and K.
  // NOTE: addresses are computed once here and then advanced by one add per k-tile; keeping
  // the 64-bit index arithmetic out of the loop is what keeps the 8x8 config under 128 registers.
  CG_DEVICE SimtTileIterator(const T* base, index_t s_mn, index_t s_k, int tid, int mn0, int k0) {
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

  // True when every vector of every k-tile in [k_begin, k_begin + whole tiles) of this CTA's
  // tile is in bounds and aligned: the mainloop then runs unguarded loads (uniform per CTA).
  CG_DEVICE static bool all_vectors_ok(const T* base, index_t s_mn, index_t s_k, int mn0, int mn_end,
                                       int k_begin) {
    const index_t contig_stride = kContigK ? s_k : s_mn;
    const index_t other_stride = kContigK ? s_mn : s_k;
    const int contig_origin = kContigK ? k_begin : mn0;
    return mn0 + kTileMN <= mn_end && contig_stride == 1 && other_stride % kVec == 0 &&
           contig_origin % kVec == 0 && is_aligned<T, kVec>(base);
  }

  template <bool kGuarded>
  CG_DEVICE void load(index_t s_mn, index_t s_k, int mn_end, int k_end) {
    if (!kGuarded) {
#pragma unroll
      for (int it = 0; it < kIters; ++it) frag[it] = *reinterpret_cast<const Vec<T, kVec>*>(ptr[it]);
      return;
    }
#pragma unroll
    for (int it = 0; it < kIters; ++it) {
      const T* p = ptr[it];
      const bool in_strided = kContigK ? (mn[it] < mn_end) : (k[it] < k_end);
      const int contig_left = kContigK ? (k_end - k[it]) : (mn_end - mn[it]);
      const index_t contig_stride = kContigK ? s_k : s_mn;
      if (in_strided && contig_left >= kVec && contig_stride == 1 && is_aligned<T, kVec>(p)) {
        frag[it] = *reinterpret_cast<const Vec<T, kVec>*>(p);
      } else {
#pragma unroll
        for (int j = 0; j < kVec; ++j) {
          const bool ok = in_strided && j < contig_left;
          frag[it].v[j] = ok ? p[index_t(j) * contig_stride] : zero_of<T>();
        }
      }
    }
  }

  CG_DEVICE void store(SmemTile& smem, int tid) const {
#pragma unroll
    for (int it = 0; it < kIters; ++it) {
      int tmn, tk;
      coords(tid, it, tmn, tk);
      if (kContigK) {
#pragma unroll
        for (int j = 0; j < kVec; ++j) smem[tk + j][tmn] = to_acc<Acc>(frag[it].v[j]);  // transpose to K-outer
      } else {
        Vec<Acc, kVec> x;
#pragma unroll
        for (int j = 0; j < kVec; ++j) x.v[j] = to_acc<Acc>(frag[it].v[j]);
        *reinterpret_cast<Vec<Acc, kVec>*>(&smem[tk][tmn]) = x;
      }
    }
  }
};

}  // namespace cutorch_gemm
