#pragma once
// The Ampere-class collective mainloop: a ring of kStages shared-memory slices filled by
// cp.async (global -> shared, no registers), read by ldmatrix into mma.sync fragments. One
// output tile of one problem, K range [k_begin, k_end).
//
// Shared-memory slices. Each operand slice is a stack of rows that are whole 128-byte lines,
// and chunk c (16 bytes) of row r is stored at chunk c ^ (r % 8):
//   K-major (the operand's K stride is 1, or it is fully strided): rows = M (or N), one
//     128-byte row holds the slice's kBlockK elements of K.
//   MN-major (the operand's M or N stride is 1): rows = K, one row holds kBlockM (kBlockN)
//     elements of M (N).
// ldmatrix reads 8 rows at one logical chunk, which the swizzle spreads over 8 distinct
// 16-byte bank groups; cp.async writes whole rows. Both are free of bank conflicts.
//
// Loads. A 16-byte chunk is 16 / sizeof(T) consecutive elements of a row. The widest copy the
// operand allows is chosen per CTA (vec: 16, 8 or 4 bytes of cp.async, or 0 for element-wise
// copies when the contiguous stride is not 1 or the address is only element-aligned), so odd
// leading dimensions and sliced views run on tensor cores without a copy. Chunks past the
// problem's edge copy fewer (or zero) source bytes; cp.async zero-fills the rest.

#include <type_traits>

#include "cutorch_gemm/arch/sm80_cp_async.cuh"
#include "cutorch_gemm/arch/sm80_ldmatrix.cuh"
#include "cutorch_gemm/arch/sm80_mma.cuh"
#include "cutorch_gemm/core/numeric.cuh"

namespace cutorch_gemm::sm80 {

// Byte offset of byte `byte` of row `row` in a swizzled slice with kRowBytes per row: chunk c
// of row r is stored at chunk c ^ ((r << kShift) % 8).
// kShift 0 (16-bit, tf32, int8): 8 rows read at one chunk (ldmatrix) hit 8 distinct chunks.
// kShift 1 (fp64): a half-warp's 8-byte gathers read 2 adjacent chunks in each of 4 rows; rows
// XORed by 0, 2, 4, 6 keep those 8 chunks distinct (with kShift 0, rows 2i and 2i+1 swap the
// same two chunks: 2-way bank conflicts, measured by ncu on every fp64 fragment load).
template <int kRowBytes, int kShift = 0>
CG_DEVICE uint32_t swizzle(int row, int byte) {
  static_assert(kRowBytes % 128 == 0, "slice rows are whole 128-byte lines");
  return uint32_t(row * kRowBytes + ((((byte >> 4) ^ (row << kShift)) & 7) | ((byte >> 4) & ~7)) * 16 + (byte & 15));
}

// The swizzle shift of a slice of element type T (see swizzle).
template <typename T>
constexpr int swizzle_shift() { return sizeof(T) == 8 ? 1 : 0; }

// The widest copy (bytes) that keeps every chunk of an operand aligned; 0: element-wise.
// origin: the CTA's first element; row_stride: elements between slice rows (the stride that is
// not the contiguous one); contiguous_stride: must be 1 for vector copies.
template <typename T>
CG_DEVICE int copy_width(const T* origin, index_t row_stride, index_t contiguous_stride) {
  if (contiguous_stride != 1) return 0;
  const uint64_t bits = uint64_t(reinterpret_cast<uintptr_t>(origin)) | uint64_t(row_stride * index_t(sizeof(T)));
  if (bits % 16 == 0) return 16;
  if (bits % 8 == 0) return 8;
  if (bits % 4 == 0) return 4;
  return 0;
}

// The narrow copies of one chunk (vec 8 or 4 bytes, or element-wise). Out of line: these
// paths are rare (misaligned or strided operands), and inlined they would hoist their
// per-element offsets into registers for the whole mainloop.
template <typename T>
__device__ __noinline__ void copy_chunk_narrow(uint32_t dst, const T* src, int valid, index_t stride, int vec) {
  constexpr int kE = int(sizeof(T));
  constexpr int kV = 16 / kE;
  const int bytes = valid * kE;
  if (vec == 8) {
#pragma unroll
    for (int p = 0; p < 2; ++p)
      cp_async_small<8>(dst + 8 * p, reinterpret_cast<const char*>(src) + 8 * p, min_of(max_of(bytes - 8 * p, 0), 8));
  } else if (vec == 4) {
#pragma unroll
    for (int p = 0; p < 4; ++p)
      cp_async_small<4>(dst + 4 * p, reinterpret_cast<const char*>(src) + 4 * p, min_of(max_of(bytes - 4 * p, 0), 4));
  } else if constexpr (kE >= 4) {
    // Element-wise, still asynchronous: one cp.async per element at any stride.
    for (int e = 0; e < kV; ++e) cp_async_small<kE>(dst + kE * e, src + e * stride, e < valid ? kE : 0);
  } else {
    // 8- and 16-bit elements below 4-byte alignment or at any stride: through registers
    // (synchronous; cp.async copies at least 4 bytes).
    using Raw = typename std::conditional<kE == 1, uint8_t, uint16_t>::type;
    union {
      Raw v[kV];
      uint32_t w[4];
    } u;
#pragma unroll
    for (int e = 0; e < kV; ++e) u.v[e] = e < valid ? reinterpret_cast<const Raw*>(src + e * stride)[0] : Raw(0);
    asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};\n" ::"r"(dst), "r"(u.w[0]), "r"(u.w[1]), "r"(u.w[2]),
                 "r"(u.w[3]));
  }
}

// One chunk: `valid` of its 16 / sizeof(T) elements exist (the rest are zero-filled).
template <typename T>
CG_DEVICE void copy_chunk(uint32_t dst, const T* src, int valid, index_t stride, int vec) {
  if (vec == 16) {
    cp_async_16(dst, src, valid * int(sizeof(T)));
  } else {
    copy_chunk_narrow(dst, src, valid, stride, vec);
  }
}

// Global -> shared loader of one operand slice (kExtent rows of M or N, kBlockK of K).
// kMnMajor: the slice's rows are K (MN-major) instead of M/N (K-major).
// kHint: the interior copies carry L2 policy `policy` (cp_async_16_hint).
template <typename T, int kExtent, int kBlockK, int kThreads, bool kMnMajor, bool kHint = false>
struct SliceLoader {
  static constexpr int kE = int(sizeof(T));
  static constexpr int kV = 16 / kE;                              // elements per chunk
  static constexpr int kRows = kMnMajor ? kBlockK : kExtent;      // slice rows
  static constexpr int kRowBytes = kMnMajor ? kExtent * kE : 128;
  static constexpr int kChunksPerRow = kRowBytes / 16;
  static constexpr int kChunks = kRows * kChunksPerRow;
  static constexpr int kPerThread = kChunks / kThreads;
  static constexpr int kRowStep = kThreads / kChunksPerRow;       // rows between a thread's chunks
  static_assert(kBlockK * kE == 128, "a K slice is 128 bytes");
  static_assert(kChunks % kThreads == 0 && kThreads % kChunksPerRow == 0, "chunks split evenly over threads");

  const T* ptr;          // this thread's first chunk at the current k-tile
  index_t row_step;      // elements between this thread's successive chunks (kRowStep rows)
  index_t k_advance;     // elements from one k-tile to the next
  index_t contig_stride; // stride along the chunk (1 for vector copies)
  int row0;              // this thread's first slice row
  int col0;              // element offset of this thread's chunk inside its row
  int mn_valid;          // rows (K-major) / columns (MN-major) of M or N that exist
  int k_valid;           // elements of K left from the current k-tile on
  int vec;
  uint64_t policy;

  // origin: element (mn0, k_begin) of the operand; s_mn, s_k: its strides.
  CG_DEVICE SliceLoader(const T* origin, index_t s_mn, index_t s_k, int mn_left, int k_left, int tid,
                        uint64_t l2_policy = 0) {
    policy = l2_policy;
    row0 = tid / kChunksPerRow;
    col0 = (tid % kChunksPerRow) * kV;
    mn_valid = mn_left;
    k_valid = k_left;
    k_advance = index_t(kBlockK) * s_k;
    if constexpr (kMnMajor) {
      ptr = origin + index_t(row0) * s_k + index_t(col0) * s_mn;
      row_step = index_t(kRowStep) * s_k;
      contig_stride = s_mn;
      vec = copy_width(origin, s_k, s_mn);
    } else {
      ptr = origin + index_t(row0) * s_mn + index_t(col0) * s_k;
      row_step = index_t(kRowStep) * s_mn;
      contig_stride = s_k;
      vec = copy_width(origin, s_mn, s_k);
    }
  }

  // Shared-memory offset of this thread's chunk i (the swizzle only depends on row % 8, so
  // when the thread's rows are 8 apart, chunk i is an immediate offset from chunk 0).
  CG_DEVICE uint32_t dst_offset(int i) const {
    if constexpr (kRowStep % 8 == 0) {
      return swizzle<kRowBytes, swizzle_shift<T>()>(row0, col0 * kE) + uint32_t(i * kRowStep * kRowBytes);
    } else {
      return swizzle<kRowBytes, swizzle_shift<T>()>(row0 + i * kRowStep, col0 * kE);
    }
  }

  // Issues the copies of the current k-tile into `slice` and moves to the next k-tile.
  CG_DEVICE void load(uint32_t slice) {
    // Interior k-tile of an interior tile with 16-byte copies: no predicates at all.
    const bool full = vec == 16 && k_valid >= kBlockK && mn_valid >= kExtent;
    const T* src = ptr;
    if (full) {
#pragma unroll
      for (int i = 0; i < kPerThread; ++i, src += row_step) {
        if constexpr (kHint) cp_async_16_hint(slice + dst_offset(i), src, policy);
        else cp_async_16(slice + dst_offset(i), src, 16);
      }
    } else {
#pragma unroll
      for (int i = 0; i < kPerThread; ++i, src += row_step) {
        const int row = row0 + i * kRowStep;
        int valid;
        if constexpr (kMnMajor) {
          valid = row < k_valid ? min_of(max_of(mn_valid - col0, 0), kV) : 0;
        } else {
          valid = row < mn_valid ? min_of(max_of(k_valid - col0, 0), kV) : 0;
        }
        copy_chunk(slice + dst_offset(i), src, valid, contig_stride, vec);
      }
    }
    ptr += k_advance;
    k_valid -= kBlockK;
  }
};

// Warp-level fragments of one k-step from a slice, for the atom's operand layouts.
// A fragment of MMA tile i covers rows [m_base, m_base + kM) and k [k_base, k_base + kK).
template <class Atom, int kExtentA, int kExtentB, bool kAMn, bool kBMn>
struct WarpFragments {
  using T = typename Atom::Element;
  static constexpr int kE = int(sizeof(T));
  static constexpr int kRowBytesA = kAMn ? kExtentA * kE : 128;
  static constexpr int kRowBytesB = kBMn ? kExtentB * kE : 128;
  // ldmatrix applies to every K-major slice whose k-step is 32 bytes (16-bit, tf32, int8), and
  // to MN-major 16-bit slices through .trans; the rest (fp64, MN-major tf32 / int8) gathers
  // elements.
  static constexpr bool kLdsmA = kE == 2 || (kE != 8 && !kAMn);
  static constexpr bool kLdsmB = kE == 2 || (kE != 8 && !kBMn);

  template <int kRowBytes, bool kMn>
  CG_DEVICE static uint32_t elem_offset(int mn, int k) {
    constexpr int kShift = swizzle_shift<T>();
    return kMn ? swizzle<kRowBytes, kShift>(k, mn * kE) : swizzle<kRowBytes, kShift>(mn, k * kE);
  }

  template <int kRegs, int kElems, int kRowBytes, bool kMn, bool kIsA>
  CG_DEVICE static void gather(uint32_t (&frag)[kRegs], const char* slice, int mn_base, int k_base, int lane) {
    static_assert(kElems * kE == kRegs * 4, "fragment registers hold its elements");
    union {
      T e[kElems];
      uint32_t r[kRegs];
    } u;
#pragma unroll
    for (int e = 0; e < kElems; ++e) {
      const Coord c = kIsA ? Atom::a_coord(lane, e) : Atom::b_coord(lane, e);
      const int mn = kIsA ? c.row : c.col;
      const int k = kIsA ? c.col : c.row;
      u.e[e] = *reinterpret_cast<const T*>(slice + elem_offset<kRowBytes, kMn>(mn_base + mn, k_base + k));
    }
#pragma unroll
    for (int r = 0; r < kRegs; ++r) frag[r] = u.r[r];
  }

  // ldmatrix addressing. A lane's row always has (row % 8) == (lane % 8), so the swizzle of its
  // address is fixed per lane and the rest moves by XOR: with a 128-byte aligned slice,
  //   K-major:  (slice + lane_offset) ^ (32 * k-step)  + 16 rows * 128 B per MMA tile (immediate)
  //   MN-major: (slice + lane_offset + 16 k-rows * row bytes per k-step) ^ (32 * MMA tile pair)
  // one LOP3 per ldmatrix instead of recomputing the swizzle.
  // (MN-major: tiles i (A) / pairs j (B) step the 16-byte chunk by 2, so the XOR stays in the
  // chunk's low 3 bits as long as a warp spans at most 64 elements of M / N.)

  // Byte offset, inside the A slice, of this lane's ldmatrix row for k-step 0, MMA tile 0.
  CG_DEVICE static uint32_t a_lane_offset(int wm, int lane) {
    if constexpr (!kAMn) {
      // 4 matrices: rows 0-7 / 8-15 x first / second 16-byte chunk of the 32-byte k-step
      return swizzle<kRowBytesA>(wm + (lane & 15), (lane >> 4) * 16);
    } else {
      // rows are k: matrices (m 0-7, k 0-7), (m 8-15, k 0-7), (m 0-7, k 8-15), (m 8-15, k 8-15)
      const int q = lane >> 3;
      return swizzle<kRowBytesA>((lane & 7) + 8 * (q >> 1), (wm + 8 * (q & 1)) * kE);
    }
  }
  // Same for B, for the pair of MMA tiles (n 0-7, n 8-15) one ldmatrix.x4 loads.
  CG_DEVICE static uint32_t b_lane_offset(int wn, int lane) {
    if constexpr (!kBMn) {
      // rows are n: (n 0-7, chunk 0), (n 0-7, chunk 1), (n 8-15, chunk 0), (n 8-15, chunk 1)
      return swizzle<kRowBytesB>(wn + (lane & 7) + 8 * (lane >> 4), ((lane >> 3) & 1) * 16);
    } else {
      // rows are k: (k 0-7, n 0-7), (k 8-15, n 0-7), (k 0-7, n 8-15), (k 8-15, n 8-15)
      return swizzle<kRowBytesB>((lane & 7) + 8 * ((lane >> 3) & 1), (wn + 8 * (lane >> 4)) * kE);
    }
  }

  // A fragment of MMA tile i at k-step ks; a0: shared address of the slice + a_lane_offset.
  template <int kMI>
  CG_DEVICE static void load_a(uint32_t (&frag)[kMI][Atom::kARegs], uint32_t a0, const char* slice, int wm, int ks,
                               int lane) {
    if constexpr (kLdsmA) {
      static_assert(!kAMn || kMI <= 4, "MN-major XOR addressing spans at most 64 rows of M per warp");
#pragma unroll
      for (int i = 0; i < kMI; ++i) {
        uint32_t r[4];
        if constexpr (!kAMn) {
          const uint32_t addr = (a0 ^ uint32_t(32 * ks)) + uint32_t(i * 16 * kRowBytesA);
          ldmatrix_x4(r, addr);
        } else {
          const uint32_t addr = (a0 + uint32_t(ks * 16 * kRowBytesA)) ^ uint32_t(32 * i);
          ldmatrix_x4_trans(r, addr);
        }
#pragma unroll
        for (int e = 0; e < 4; ++e) frag[i][e] = r[e];
      }
    } else {
#pragma unroll
      for (int i = 0; i < kMI; ++i)
        gather<Atom::kARegs, Atom::kAElems, kRowBytesA, kAMn, true>(frag[i], slice, wm + i * Atom::kM,
                                                                     ks * Atom::kK, lane);
    }
  }

  // B fragments of all kNI MMA tiles at k-step ks; b0: shared address of the slice + b_lane_offset.
  template <int kNI>
  CG_DEVICE static void load_b(uint32_t (&frag)[kNI][Atom::kBRegs], uint32_t b0, const char* slice, int wn, int ks,
                               int lane) {
    static_assert(kNI % 2 == 0, "B fragments come in pairs of MMA tiles");
    if constexpr (kLdsmB) {
      static_assert(!kBMn || kNI <= 8, "MN-major XOR addressing spans at most 64 columns of N per warp");
#pragma unroll
      for (int jp = 0; jp < kNI / 2; ++jp) {
        uint32_t r[4];
        if constexpr (!kBMn) {
          const uint32_t addr = (b0 ^ uint32_t(32 * ks)) + uint32_t(jp * 16 * kRowBytesB);
          ldmatrix_x4(r, addr);
        } else {
          const uint32_t addr = (b0 + uint32_t(ks * 16 * kRowBytesB)) ^ uint32_t(32 * jp);
          ldmatrix_x4_trans(r, addr);
        }
        frag[2 * jp][0] = r[0];
        frag[2 * jp][1] = r[1];
        frag[2 * jp + 1][0] = r[2];
        frag[2 * jp + 1][1] = r[3];
      }
    } else {
#pragma unroll
      for (int j = 0; j < kNI; ++j)
        gather<Atom::kBRegs, Atom::kBElems, kRowBytesB, kBMn, false>(frag[j], slice, wn + j * Atom::kN,
                                                                     ks * Atom::kK, lane);
    }
  }
};

// The mainloop of one CTA tile. Accumulators: [kMI][kNI][kCElems] per warp.
template <class Cfg, typename T, bool kAMn, bool kBMn>
struct Mainloop {
  using Atom = typename Sm80MmaFor<T>::type;
  using Acc = typename Atom::Acc;
  static constexpr int kMI = Cfg::kWarpTileM / Atom::kM;
  static constexpr int kNI = Cfg::kWarpTileN / Atom::kN;
  static constexpr int kKSteps = Cfg::kBlockK / Atom::kK;
  static constexpr int kABytes = Cfg::kBlockM * 128;  // A slice bytes (B follows it)
  static_assert(Cfg::kBlockK * int(sizeof(T)) == 128, "config's K slice must be 128 bytes of T");
  static_assert(Cfg::kWarpTileM % Atom::kM == 0 && Cfg::kWarpTileN % (2 * Atom::kN) == 0, "warp tile of atoms");
  static_assert(kKSteps % 2 == 0, "fragments are double-buffered by k-step parity across k-tiles");
  using LoaderA = SliceLoader<T, Cfg::kBlockM, Cfg::kBlockK, Cfg::kGroupThreads, kAMn, Cfg::kL2EvictFirst>;
  using LoaderB = SliceLoader<T, Cfg::kBlockN, Cfg::kBlockK, Cfg::kGroupThreads, kBMn, Cfg::kL2EvictFirst>;

  // The ring's barrier: the CTA, or with sliced K only this thread's K group (named barrier
  // 1 + group; barrier 0 is the CTA's), whose k-tile count may differ from the other group's.
  CG_DEVICE static void sync_ring() {
    if constexpr (Cfg::kSlicesK == 1) {
      __syncthreads();
    } else {
      asm volatile("bar.sync %0, %1;" ::"r"(1 + int(threadIdx.x) / Cfg::kGroupThreads), "r"(Cfg::kGroupThreads)
                   : "memory");
    }
  }
  using Frags = WarpFragments<Atom, Cfg::kBlockM, Cfg::kBlockN, kAMn, kBMn>;
  // NOTE: int8 with an MN-major operand gathers its fragments byte by byte; with the next
  // k-step's fragments in flight on top of 128 int32 accumulators it ran out of registers
  // (~1 KB of spills per thread), so it loads each k-step's fragments just before its MMAs.
  static constexpr bool kPrefetch = !(sizeof(T) == 1 && (kAMn || kBMn));
  static constexpr int kBufs = kPrefetch ? 2 : 1;

  struct Accumulators {
    Acc v[kMI][kNI][Atom::kCElems];
  };

  // Ring barriers one run executes for k_len: one after the prologue and one per k-tile.
  CG_HOST_DEVICE static int ring_syncs(int k_len) {
    const int k_tiles = ceil_div(k_len, Cfg::kBlockK);
    return k_tiles > 0 ? 1 + k_tiles : 0;
  }

  // a, b: element (m0, k_begin) of A and (k_begin, n0) of B. m_left / n_left: rows / columns of
  // the problem from m0 / n0 on; k_len = k_end - k_begin. smem: this thread's K group's ring.
  CG_DEVICE static void run(char* smem, const T* a, index_t a_sm, index_t a_sk, const T* b, index_t b_sk,
                            index_t b_sn, int m_left, int n_left, int k_len, Accumulators& acc,
                            bool l2_hint = true) {
    const int tid = Cfg::kSlicesK == 1 ? int(threadIdx.x) : int(threadIdx.x) % Cfg::kGroupThreads;
    const int lane = tid & 31;
    const int warp = tid >> 5;
    const int wm = (warp % Cfg::kWarpsM) * Cfg::kWarpTileM;
    const int wn = (warp / Cfg::kWarpsM) * Cfg::kWarpTileN;
#pragma unroll
    for (int i = 0; i < kMI; ++i)
#pragma unroll
      for (int j = 0; j < kNI; ++j)
#pragma unroll
        for (int e = 0; e < Atom::kCElems; ++e) acc.v[i][j][e] = Acc(0);

    const uint64_t policy = Cfg::kL2EvictFirst ? l2_policy(l2_hint) : 0;
    LoaderA la(a, a_sm, a_sk, m_left, k_len, tid, policy);
    LoaderB lb(b, b_sn, b_sk, n_left, k_len, tid, policy);
    uint32_t base = smem_addr(smem);
    // (hinted copies: the ring's base through a shuffle, so that ptxas keeps their shared addresses in
    // plain registers; cp_async_16_hint's note says why)
    if constexpr (Cfg::kL2EvictFirst) base = __shfl_sync(0xffffffffu, base, lane);
    const int k_tiles = ceil_div(k_len, Cfg::kBlockK);

    // Prologue: stages 0 .. kStages-2 in flight (a group per stage, empty past the end).
#pragma unroll
    for (int s = 0; s < Cfg::kStages - 1; ++s) {
      if (s < k_tiles) {
        la.load(base + s * Cfg::kStageBytes);
        lb.load(base + s * Cfg::kStageBytes + kABytes);
      }
      cp_async_commit();
    }
    if (k_tiles <= 0) {
      cp_async_wait<0>();
      return;
    }

    uint32_t fa[kBufs][kMI][Atom::kARegs];
    uint32_t fb[kBufs][kNI][Atom::kBRegs];
    int read_stage = 0;
    int write_stage = Cfg::kStages - 1;
    cp_async_wait<Cfg::kStages - 2>();
    sync_ring();

    // NOTE: the slices start 128-byte aligned (dynamic shared memory is, and stage and B
    // offsets are multiples of 128), which the XOR addressing needs.
    const uint32_t a_off = Frags::a_lane_offset(wm, lane);
    const uint32_t b_off = Frags::b_lane_offset(wn, lane) + kABytes;
    const auto load_frags = [&](int buf, int stage, int ks) {
      const uint32_t s0 = base + uint32_t(stage * Cfg::kStageBytes);
      const char* sa = smem + stage * Cfg::kStageBytes;
      Frags::load_a(fa[buf], s0 + a_off, sa, wm, ks, lane);
      Frags::load_b(fb[buf], s0 + b_off, sa + kABytes, wn, ks, lane);
    };
    if constexpr (kPrefetch) load_frags(0, read_stage, 0);

    for (int kt = 0; kt < k_tiles; ++kt) {
#pragma unroll
      for (int ks = 0; ks < kKSteps; ++ks) {
        // Without prefetch: this k-step's fragments, read before the stage may be released below.
        if constexpr (!kPrefetch) load_frags(0, read_stage, ks);
        if (ks == kKSteps - 1) {
          // The next k-tile's stage must have landed (and every warp be done with the stage
          // the next loads overwrite) before its first fragments are read.
          cp_async_wait<Cfg::kStages - 2>();
          sync_ring();
          read_stage = read_stage + 1 == Cfg::kStages ? 0 : read_stage + 1;
        }
        // Fragments of the next k-step while this one's MMAs run.
        if constexpr (kPrefetch) {
          if (ks + 1 < kKSteps || kt + 1 < k_tiles) load_frags((ks + 1) & 1, read_stage, (ks + 1) % kKSteps);
        }
        if (ks == 0) {
          if (kt + Cfg::kStages - 1 < k_tiles) {
            la.load(base + write_stage * Cfg::kStageBytes);
            lb.load(base + write_stage * Cfg::kStageBytes + kABytes);
          }
          cp_async_commit();
          write_stage = write_stage + 1 == Cfg::kStages ? 0 : write_stage + 1;
        }
#pragma unroll
        for (int i = 0; i < kMI; ++i)
#pragma unroll
          for (int j = 0; j < kNI; ++j) {
            // serpentine over n: consecutive MMAs share a B fragment
            const int jj = (i & 1) ? kNI - 1 - j : j;
            Atom::mma(acc.v[i][jj], fa[(ks & 1) % kBufs][i], fb[(ks & 1) % kBufs][jj]);
          }
      }
    }
    cp_async_wait<0>();
  }
};

}  // namespace cutorch_gemm::sm80
