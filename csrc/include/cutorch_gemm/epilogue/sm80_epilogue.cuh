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
//             kernel sums them in split order and applies the epilogue. When the whole grid is
//             resident at once (the launcher checks), the slices of a tile instead wait for each
//             other on an arrival counter and each sums one band of the tile's rows
//             (reduce_band): the same order, so the same bits, without the second kernel.

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

  // Fragments -> shared memory. Elements 2i, 2i+1 of a C fragment are adjacent columns. With
  // sliced K the groups take turns in group order: the first stores its accumulators, each
  // later one adds its own (a fixed order, so results are deterministic).
  CG_DEVICE static void stage(char* smem, const typename Mainloop::Accumulators& acc) {
    const int lane = threadIdx.x & 31;
    // (compile-time constants without sliced K: the int8 MN-major kernels sit at the register
    // limit, and a runtime group index there cost kilobytes of spills)
    const int warp = (Cfg::kSlicesK == 1 ? int(threadIdx.x) : int(threadIdx.x) % Cfg::kGroupThreads) >> 5;
    const int group = Cfg::kSlicesK == 1 ? 0 : int(threadIdx.x) / Cfg::kGroupThreads;
    const int wm = (warp % Cfg::kWarpsM) * Cfg::kWarpTileM;
    const int wn = (warp / Cfg::kWarpsM) * Cfg::kWarpTileN;
    __syncthreads();  // every warp is done reading the ring(s)
#pragma unroll
    for (int turn = 0; turn < Cfg::kSlicesK; ++turn) {
      if (group == turn) {
#pragma unroll
        for (int i = 0; i < Mainloop::kMI; ++i)
#pragma unroll
          for (int j = 0; j < Mainloop::kNI; ++j)
#pragma unroll
            for (int e = 0; e < Atom::kCElems; e += 2) {
              const Coord c = Atom::c_coord(lane, e);
              Vec<Acc, 2>* dst = reinterpret_cast<Vec<Acc, 2>*>(smem + (wm + i * Atom::kM + c.row) * kRowBytes +
                                                                (wn + j * Atom::kN + c.col) * int(sizeof(Acc)));
              Vec<Acc, 2> v;
              v.v[0] = acc.v[i][j][e];
              v.v[1] = acc.v[i][j][e + 1];
              if (turn > 0) {
                const Vec<Acc, 2> prev = *dst;
                v.v[0] = prev.v[0] + v.v[0];
                v.v[1] = prev.v[1] + v.v[1];
              }
              *dst = v;
            }
      }
      __syncthreads();
    }
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

  // 4 consecutive partials through L2 (.cg): other SMs wrote them during this launch.
  CG_DEVICE static void load_cg4(const Acc* src, bool vec, int valid, Acc (&v)[4]) {
    if (vec) {
      if constexpr (std::is_same_v<Acc, float>) {
        const float4 x = __ldcg(reinterpret_cast<const float4*>(src));
        v[0] = x.x; v[1] = x.y; v[2] = x.z; v[3] = x.w;
      } else {
        const double2 x = __ldcg(reinterpret_cast<const double2*>(src));
        const double2 y = __ldcg(reinterpret_cast<const double2*>(src) + 1);
        v[0] = x.x; v[1] = x.y; v[2] = y.x; v[3] = y.y;
      }
      return;
    }
#pragma unroll
    for (int e = 0; e < 4; ++e) v[e] = e < valid ? __ldcg(src + e) : Acc(0);
  }

  // Parallel split-K reduced in the kernel (p.fused_reduce). Called by every slice of a tile
  // after its partial is stored: waits until all p.splits slices have stored theirs, then sums
  // rows [split * band, (split + 1) * band) of the tile over the slices in split order (as
  // splitk_reduce_kernel: 0 + s0 + s1 + ..., so results are bit-identical to it) and stores
  // them through the epilogue. The counter goes 0 -> splits (arrivals) -> 2 * splits
  // (departures); the last to depart puts it back to 0 for the next launch on this stream.
  CG_DEVICE static void reduce_band(char* smem, const Sm80Params& p, const Problem& prob, int z, int m0, int n0,
                                    index_t slot, int split) {
    int* count = p.semaphores + slot;
    // Release / acquire through one thread: the CTA barrier orders every thread's partial stores
    // before thread 0's release fence (fences are cumulative), and thread 0's acquire load before
    // every thread's reads after the second barrier. (A __threadfence per thread is a full
    // sequentially consistent fence each.)
    __syncthreads();
    if (threadIdx.x == 0) {
      asm volatile("fence.acq_rel.gpu;" ::: "memory");
      atomicAdd(count, 1);
      // NOTE: cannot deadlock: the launcher only fuses when every CTA of the grid is resident
      // at once (occupancy check and a cooperative launch).
      for (;;) {
        int seen;
        asm volatile("ld.acquire.gpu.global.b32 %0, [%1];" : "=r"(seen) : "l"(count) : "memory");
        if (seen >= p.splits) break;
        __nanosleep(32);
      }
      if (atomicAdd(count, 1) == 2 * p.splits - 1) atomicExch(count, 0);
    }
    __syncthreads();
    const GemmArgs& g = p.args;
    const int band = ceil_div(Cfg::kBlockM, p.splits);
    const int r_end = min_of(min_of((split + 1) * band, Cfg::kBlockM), prob.m - m0);
    const int col = (threadIdx.x % kColGroups) * 4;
    const int n = n0 + col;
    if (n >= prob.n) return;
    const int valid = min_of(4, prob.n - n);
    const bool vec = valid == 4 && g.shape.n % 4 == 0;  // every split's rows start 16-byte aligned
    const index_t slab = index_t(g.batch) * g.shape.m * g.shape.n;
    const Acc* ws = static_cast<const Acc*>(p.workspace);
    // Every slice's loads of kRowsAtOnce rows are issued before the first add (a thread has
    // only a few rows, so the band is latency-bound; the accumulators are dead here, so the
    // registers are free). H100, 512x512x16384 fp16, sliced-K x8: the kernel takes 29.2 us
    // against 25.0 + 3.8 us for the GEMM kernel and the reduction kernel, and the call 34.3
    // against 35.0 us: the second launch's gap is what the fused form saves.
    constexpr int kRowsAtOnce = sizeof(Acc) == 4 ? 2 : 1;
    for (int row = split * band + threadIdx.x / kColGroups; row < r_end; row += kRowsAtOnce * kRowsPerPass) {
      Acc v[kRowsAtOnce][kSm80MaxSplits][4];
#pragma unroll
      for (int r = 0; r < kRowsAtOnce; ++r) {
        const Acc* src = ws + (index_t(z) * g.shape.m + (m0 + row + r * kRowsPerPass)) * g.shape.n + n;
#pragma unroll
        for (int s = 0; s < kSm80MaxSplits; ++s)
          if (s < p.splits && s != split && row + r * kRowsPerPass < r_end)
            load_cg4(src + index_t(s) * slab, vec, valid, v[r][s]);
      }
#pragma unroll
      for (int r = 0; r < kRowsAtOnce; ++r) {
        if (row + r * kRowsPerPass >= r_end) break;
        const Vec4 own = at(smem, row + r * kRowsPerPass, col);  // this slice's band never left shared memory
        Acc sum[4] = {Acc(0), Acc(0), Acc(0), Acc(0)};
#pragma unroll
        for (int s = 0; s < kSm80MaxSplits; ++s)
          if (s < p.splits) {
#pragma unroll
            for (int e = 0; e < 4; ++e) sum[e] += s == split ? own.v[e] : v[r][s][e];
          }
        SimtEpilogue<T>::store4(g, prob, m0 + row + r * kRowsPerPass, n, sum);
      }
    }
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
    // Partials: one vector store of four columns where every row starts 16-byte aligned. The
    // in-kernel reduction leaves this slice's own band of rows in shared memory (reduce_band).
    const bool vec_partial = n + 3 < prob.n && g.shape.n % 4 == 0;
    const int band = p.fused_reduce ? ceil_div(Cfg::kBlockM, p.splits) : 0;
    const int own_begin = int(blockIdx.y) * band, own_end = own_begin + band;
    for (int row = threadIdx.x / kColGroups; row < Cfg::kBlockM; row += kRowsPerPass) {
      const int m = m0 + row;
      if (m >= prob.m) break;
      const Vec4 s = at(smem, row, col);
      const Acc v[4] = {s.v[0], s.v[1], s.v[2], s.v[3]};
      if (partial) {
        if (row >= own_begin && row < own_end) continue;
        Acc* ws = static_cast<Acc*>(p.workspace) +
                  ((index_t(blockIdx.y) * g.batch + z) * g.shape.m + m) * g.shape.n;
        if (vec_partial) {
          *reinterpret_cast<Vec4*>(ws + n) = s;
        } else {
#pragma unroll
          for (int e = 0; e < 4; ++e)
            if (n + e < prob.n) ws[n + e] = v[e];
        }
      } else if constexpr (std::is_same_v<T, int8_t>) {
        store_int32(g, prob, m, n, v);  // int8 products: int32, no fusion (torch._int_mm)
      } else {
        SimtEpilogue<T>::store4(g, prob, m, n, v);
      }
    }
  }
};

}  // namespace cutorch_gemm::sm80
