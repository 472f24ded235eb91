#pragma once
// Ampere-class epilogue: accumulator fragments -> shared memory (the whole CTA tile in fp32 /
// fp64, reusing the mainloop's ring) -> rows of four consecutive columns per thread, so the
// fusion functor (alpha, beta*C, bias, activation, out_dtype) runs on coalesced, vectorized
// loads of C and stores of D.
//
// Split-K:
//   serial    slices of one tile take turns in split order (a semaphore per tile): each adds
//             the running partial from the workspace, and all but the last write it back; the
//             last applies the epilogue. Deterministic, one partial tile per output tile.
//   parallel  every slice writes its raw partial to workspace[split][z][m][n]; a reduction
//             kernel sums them in split order and applies the epilogue.

#include <type_traits>

#include "cutorch_gemm/device/sm80_params.h"
#include "cutorch_gemm/epilogue/simt_epilogue.cuh"

namespace cutorch_gemm::sm80 {

template <class Cfg, class Mainloop>
struct Epilogue {
  using Atom = typename Mainloop::Atom;
  using Acc = typename Mainloop::Acc;
  using T = typename Atom::Element;
  static constexpr int kRowBytes = sm80_epilogue_row_bytes(Cfg::kBlockN, int(sizeof(Acc)));
  static constexpr int kColGroups = Cfg::kBlockN / 4;  // a thread owns 4 consecutive columns
  static constexpr int kRowsPerPass = Cfg::kThreads / kColGroups;
  static_assert(Cfg::kThreads % kColGroups == 0, "threads cover whole rows");
  // (sm80_smem_bytes sizes the dynamic shared memory for the larger of ring and this tile.)

  using Vec4 = Vec<Acc, 4>;

  CG_DEVICE static Vec4& at(char* smem, int row, int col) {
    return *reinterpret_cast<Vec4*>(smem + row * kRowBytes + col * int(sizeof(Acc)));
  }

  // Fragments -> shared memory. Elements 2i, 2i+1 of a C fragment are adjacent columns.
  CG_DEVICE static void stage(char* smem, const typename Mainloop::Accumulators& acc) {
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    const int wm = (warp % Cfg::kWarpsM) * Cfg::kWarpTileM;
    const int wn = (warp / Cfg::kWarpsM) * Cfg::kWarpTileN;
    __syncthreads();  // every warp is done reading the ring
#pragma unroll
    for (int i = 0; i < Mainloop::kMI; ++i)
#pragma unroll
      for (int j = 0; j < Mainloop::kNI; ++j)
#pragma unroll
        for (int e = 0; e < Atom::kCElems; e += 2) {
          const Coord c = Atom::c_coord(lane, e);
          Vec<Acc, 2> v;
          v.v[0] = acc.v[i][j][e];
          v.v[1] = acc.v[i][j][e + 1];
          *reinterpret_cast<Vec<Acc, 2>*>(smem + (wm + i * Atom::kM + c.row) * kRowBytes +
                                          (wn + j * Atom::kN + c.col) * int(sizeof(Acc))) = v;
        }
    __syncthreads();
  }

  // Serial split-K turn of slice `split`: returns true when this CTA must write D.
  CG_DEVICE static bool serial_turn(char* smem, const Sm80Params& p, index_t tile_slot, int split) {
    int* sem = p.semaphores + tile_slot;
    if (threadIdx.x == 0) {
      // NOTE: earlier slices of this tile were launched first (grid y is the slice), so they
      // are resident or done: the wait cannot deadlock.
      while (atomicAdd(sem, 0) != split) __nanosleep(100);
      __threadfence();
    }
    __syncthreads();
    Acc* part = static_cast<Acc*>(p.workspace) + tile_slot * index_t(Cfg::kBlockM) * Cfg::kBlockN;
    const int col = (threadIdx.x % kColGroups) * 4;
    const bool last = split == p.splits - 1;
    for (int row = threadIdx.x / kColGroups; row < Cfg::kBlockM; row += kRowsPerPass) {
      Vec4& v = at(smem, row, col);
      Vec4* w = reinterpret_cast<Vec4*>(part + row * Cfg::kBlockN + col);
      if (split > 0) {
        // .cg loads: the running partial was written by another CTA (L2, not this SM's L1)
#pragma unroll
        for (int e = 0; e < 4; ++e) v.v[e] += __ldcg(reinterpret_cast<const Acc*>(w) + e);
      }
      if (!last) *w = v;
    }
    if (last) {
      if (threadIdx.x == 0) *sem = 0;  // ready for the next launch that reuses the workspace
      return true;
    }
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) atomicExch(sem, split + 1);
    return false;
  }

  CG_DEVICE static void store_int32(const GemmArgs& g, const Problem& prob, int m, int n, const Acc (&v)[4]) {
    int32_t* d = static_cast<int32_t*>(g.d) + prob.d_off + index_t(m) * g.shape.d_sm + index_t(n) * g.shape.d_sn;
    if (g.shape.d_sn == 1 && n + 3 < prob.n && is_aligned<int32_t, 4>(d)) {
      *reinterpret_cast<Vec<int32_t, 4>*>(d) = Vec<int32_t, 4>{{v[0], v[1], v[2], v[3]}};
      return;
    }
#pragma unroll
    for (int e = 0; e < 4; ++e)
      if (n + e < prob.n) d[e * g.shape.d_sn] = v[e];
  }

  // Rows of eight columns: the fast path for whole-width tiles of a row-major D whose rows are
  // 16-byte aligned, without C (the common mm / linear case). A thread keeps the same eight
  // columns on every pass, so bias is read once, the functor runs on registers with no
  // per-element bounds or layout checks, and each pass stores one 16-byte vector of a 16-bit
  // D (two of fp32). On an H100 at locked clocks (ncu, 4096^3): bf16 kernel instructions
  // 88.6 M -> 74.3 M, cycles -3.5%; tf32 -2.7%. Under the power cap it is within the noise
  // (energy per FLOP -1%). Parallel split-K's raw partials keep the general path: the same
  // store measured 9% slower there (512x512x16384, interleaved A/B).
  static constexpr int kGroups8 = Cfg::kBlockN / 8;
  static constexpr int kRowsPerPass8 = Cfg::kThreads / kGroups8;
  static constexpr bool kRows8 = (sizeof(T) == 2 || std::is_same_v<T, float>) && Cfg::kThreads % kGroups8 == 0;

  // d: the output element (m0, n0) of this tile; ld: its row stride (elements).
  template <typename Out>
  CG_DEVICE static bool rows8_ok(const Out* d, index_t ld, const Problem& prob, int n0) {
    return n0 + Cfg::kBlockN <= prob.n && (ld * index_t(sizeof(Out))) % 16 == 0 &&
           reinterpret_cast<uintptr_t>(d) % 16 == 0;
  }

  template <typename Out>
  CG_DEVICE static void store_rows8(char* smem, const GemmArgs& g, const Problem& prob, int rows, int n0, Out* d,
                                    index_t ld) {
    const int lane = threadIdx.x & 31;
    const int col = (threadIdx.x % kGroups8) * 8;
    // Lanes of odd quads read their second 16-byte half first: a quad's four lanes sit 32
    // bytes apart, so this puts the two quads of 8 lanes on all 32 banks (no 2-way conflict).
    const bool swap = (lane >> 2) & 1;
    const LinearCombinationBiasAct<Acc> f{Acc(g.alpha), Acc(g.beta), Activation::kNone};
    Acc bias[8];
#pragma unroll
    for (int e = 0; e < 8; ++e)
      bias[e] = g.bias ? to_acc<Acc>(static_cast<const T*>(g.bias)[prob.bias_off + n0 + col + e]) : Acc(0);
    d += col;
    for (int row = threadIdx.x / kGroups8; row < rows; row += kRowsPerPass8) {
      const Vec4 first = at(smem, row, col + (swap ? 4 : 0));
      const Vec4 second = at(smem, row, col + (swap ? 0 : 4));
      Acc v[8];
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        v[e] = swap ? second.v[e] : first.v[e];
        v[e + 4] = swap ? first.v[e] : second.v[e];
      }
#pragma unroll
      for (int e = 0; e < 8; ++e) v[e] = f(v[e], bias[e]);
      if (g.act != Activation::kNone) {
#pragma unroll
        for (int e = 0; e < 8; ++e) v[e] = apply_activation(g.act, v[e]);
      }
      // 16-byte vectors only (a 32-byte Vec would claim 32-byte alignment).
      constexpr int kV = 16 / int(sizeof(Out));
#pragma unroll
      for (int h = 0; h < 8 / kV; ++h) {
        Vec<Out, kV> x;
#pragma unroll
        for (int e = 0; e < kV; ++e) x.v[e] = from_acc<Out>(v[h * kV + e]);
        *reinterpret_cast<Vec<Out, kV>*>(d + index_t(row) * ld + h * kV) = x;
      }
    }
  }

  // Staged tile -> D through the fusion functor (or raw partials for parallel split-K).
  CG_DEVICE static void store(char* smem, const Sm80Params& p, const Problem& prob, int z, int m0, int n0) {
    const GemmArgs& g = p.args;
    const bool partial = p.split_mode == SplitKMode::kParallel && p.splits > 1;
    if constexpr (kRows8) {
      if (p.rows8 && !partial && g.c == nullptr && g.shape.d_sn == 1) {
        const int rows = min_of(Cfg::kBlockM, prob.m - m0);
        const index_t off = prob.d_off + index_t(m0) * g.shape.d_sm + n0;
        if (g.out_f32) {
          float* d = static_cast<float*>(g.d) + off;
          if (rows8_ok<float>(d, g.shape.d_sm, prob, n0)) return store_rows8<float>(smem, g, prob, rows, n0, d, g.shape.d_sm);
        } else {
          T* d = static_cast<T*>(g.d) + off;
          if (rows8_ok<T>(d, g.shape.d_sm, prob, n0)) return store_rows8<T>(smem, g, prob, rows, n0, d, g.shape.d_sm);
        }
      }
    }
    const int col = (threadIdx.x % kColGroups) * 4;
    const int n = n0 + col;
    if (n >= prob.n) return;
    for (int row = threadIdx.x / kColGroups; row < Cfg::kBlockM; row += kRowsPerPass) {
      const int m = m0 + row;
      if (m >= prob.m) break;
      const Vec4 s = at(smem, row, col);
      const Acc v[4] = {s.v[0], s.v[1], s.v[2], s.v[3]};
      if (partial) {
        Acc* ws = static_cast<Acc*>(p.workspace) +
                  ((index_t(blockIdx.y) * g.batch + z) * g.shape.m + m) * g.shape.n;
#pragma unroll
        for (int e = 0; e < 4; ++e)
          if (n + e < prob.n) ws[n + e] = v[e];
      } else if constexpr (std::is_same_v<T, int8_t>) {
        store_int32(g, prob, m, n, v);  // int8 products: int32, no fusion (torch._int_mm)
      } else {
        SimtEpilogue<T>::store4(g, prob, m, n, v);
      }
    }
  }
};

}  // namespace cutorch_gemm::sm80
