#pragma once
// Epilogues of the Hopper kernel (kernel/sm90_gemm_ws_kernel.cuh), one consumer warpgroup's
// 64 x 256 fp32 accumulators (wgmma layout; 64 x 128 for the narrow config, where noted) each:
//   sm90_store_tile_direct     D = alpha * acc (+ bias) from registers (either width; + beta * C: sm90_direct_c)
//   sm90_store_tile_scaled     scaled_mm's D = sa * sb * acc + bias from registers, any D
//   sm90_store_tile            the whole fusion, staged through shared memory 32 columns at a time (either width)
//   sm90_store_tile_tma        D = act(alpha * acc (+ bias)) (or scaled_mm's) by TMA stores (Cfg's width)
//                              (kC: + beta * C, C loaded by TMA too, 16-bit D; sm90_store_tile_tma_act picks the copy)
//   sm90_store_tma_plain       the same without an activation, bias-free launches without bias code
//   (the deferred store's packing and slices: epilogue/sm90_deferred_store.cuh)
//   sm90_store_tile_tma_fused  the whole fusion by TMA stores (cooperative config; C not loadable by TMA, fp32 D)
//   sm90_store_tile_swiglu     grouped_mm's fused SwiGLU from registers (gate | up halves of the tile)

#include <cuda.h>

#include <type_traits>

#include "cutorch_gemm/arch/sm80_ldmatrix.cuh"
#include "cutorch_gemm/arch/sm90_mbarrier.cuh"
#include "cutorch_gemm/arch/sm90_stmatrix.cuh"
#include "cutorch_gemm/arch/sm90_tma.cuh"
#include "cutorch_gemm/arch/sm90_warpgroup.cuh"
#include "cutorch_gemm/device/gemm_args.h"
#include "cutorch_gemm/epilogue/simt_epilogue.cuh"

namespace cutorch_gemm {

constexpr int Sm90EpilogueCols = 32;

struct Acc4 {
  float v[4];
};

// Two adjacent output columns as one store: 16-bit pairs (4 bytes) or fp32 pairs (8 bytes).
template <typename Out>
CG_DEVICE void store_pair(Out* p, float v0, float v1) {
  if constexpr (std::is_same_v<Out, float>) {
    *reinterpret_cast<float2*>(p) = make_float2(v0, v1);
  } else {
    Vec<Out, 2> x;
    x.v[0] = from_acc<Out>(v0);
    x.v[1] = from_acc<Out>(v1);
    *reinterpret_cast<Vec<Out, 2>*>(p) = x;
  }
}

// One thread's 2 x 2 block of a row-major D from registers: v = {(r0, n), (r0, n + 1),
// (r0 + 8, n), (r0 + 8, n + 1)}. A pair store per row when `pairs` (aligned: the host's
// Sm90Params::direct_epilogue), else element by element; in0 / in1 / has1 clip the rows and the
// second column.
template <typename Out>
CG_DEVICE void store_quad(Out* row0, Out* row1, int n, bool in0, bool in1, bool has1, bool pairs,
                          const float (&v)[4]) {
  if (pairs && has1) {
    if (in0) store_pair<Out>(row0 + n, v[0], v[1]);
    if (in1) store_pair<Out>(row1 + n, v[2], v[3]);
    return;
  }
  if (in0) row0[n] = from_acc<Out>(v[0]);
  if (in1) row1[n] = from_acc<Out>(v[2]);
  if (in0 && has1) row0[n + 1] = from_acc<Out>(v[1]);
  if (in1 && has1) row1[n + 1] = from_acc<Out>(v[3]);
}

// sm90_store_tile_direct with beta * C (one dense problem; C's rows and base 4-byte aligned, launch_sm90): each
// thread's C pairs, eight n8 blocks at a time, loaded in one batch before their stores (D's stores could alias C as
// far as the compiler knows, so it would not hoist a load above an earlier store: one round trip per pair). `whole`:
// the tile lies inside the problem (no checks).
template <typename T, typename Out, int kRegs>
CG_DEVICE void sm90_direct_c(const GemmArgs& g, const Problem& prob, const float (&acc)[kRegs], int r0, int c0,
                             Out* row0, Out* row1, bool whole) {
  constexpr int kJ = kRegs / 4;
  constexpr int kBatch = 8;
  const float alpha = float(g.alpha), beta = float(g.beta);
  const T* bias = g.bias ? static_cast<const T*>(g.bias) + prob.bias_off : nullptr;
  const uint16_t* c0row = static_cast<const uint16_t*>(g.c) + index_t(r0) * g.shape.c_sm;
  const uint16_t* c1row = c0row + 8 * g.shape.c_sm;
  const bool in0 = whole || r0 < prob.m, in1 = whole || r0 + 8 < prob.m;
#pragma unroll
  for (int j0 = 0; j0 < kJ; j0 += kBatch) {
    uint32_t cp[kBatch][2];
#pragma unroll
    for (int jj = 0; jj < kBatch && j0 + jj < kJ; ++jj) {
      const int n = c0 + 8 * (j0 + jj);
      const bool pair = whole || n + 1 < prob.n, one = whole || n < prob.n;
      const bool in[2] = {in0, in1};
      const uint16_t* rows[2] = {c0row, c1row};
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        cp[jj][h] = 0u;
        if (in[h] && pair) cp[jj][h] = __ldg(reinterpret_cast<const unsigned int*>(rows[h] + n));
        else if (in[h] && one) cp[jj][h] = __ldg(rows[h] + n);
      }
    }
#pragma unroll
    for (int jj = 0; jj < kBatch && j0 + jj < kJ; ++jj) {
      const int j = j0 + jj, n = c0 + 8 * j;
      if (!whole && n >= prob.n) continue;
      const bool has1 = whole || n + 1 < prob.n;
      const float b0 = bias ? to_acc<float>(bias[n]) : 0.0f;
      const float b1 = bias && has1 ? to_acc<float>(bias[n + 1]) : 0.0f;
      auto cv = [&](int h, int e) { return sm90::half_bits_to_float<T>(uint16_t(cp[jj][h] >> (16 * e))); };
      const float v[4] = {fmaf(beta, cv(0, 0), fmaf(acc[4 * j], alpha, b0)),
                          fmaf(beta, cv(0, 1), fmaf(acc[4 * j + 1], alpha, b1)),
                          fmaf(beta, cv(1, 0), fmaf(acc[4 * j + 2], alpha, b0)),
                          fmaf(beta, cv(1, 1), fmaf(acc[4 * j + 3], alpha, b1))};
      store_quad<Out>(row0, row1, n, in0, in1, has1, true, v);
    }
  }
}

// Direct epilogue for D = alpha * acc (+ bias) (+ beta * C: kC): no activation, row-major D with even row
// stride (the host checks; Sm90Params::direct_epilogue). Each thread stores its accumulator
// pairs (wgmma layout: rows 16w + l/4 (+8), columns 8j + 2(l%4) (+1)) straight from registers:
// about two instructions per pair instead of the staged path's functor per element. Fully
// inside tiles skip every bounds check.
// NOTE: the unrolled body is small because it has no activation code (the staged path exists
// because 128 unrolled activations overflowed the instruction cache).
// kC (the fit-width tiles, one dense problem): g.c, when set, adds beta * C, read as 4-byte column pairs
// (sm90_direct_c; launch_sm90 checks their alignment).
template <typename T, typename Out, int kRegs, bool kC = false>
CG_DEVICE void sm90_store_tile_direct(const GemmArgs& g, const Problem& prob, const float (&acc)[kRegs], int row_base,
                                      int col_base, int tid_in_wg) {
  const int warp = tid_in_wg / 32, lane = tid_in_wg % 32;
  const int r0 = row_base + warp * 16 + lane / 4;
  const int c0 = col_base + 2 * (lane % 4);
  const float alpha = float(g.alpha);
  const T* bias = g.bias ? static_cast<const T*>(g.bias) + prob.bias_off : nullptr;
  Out* d = static_cast<Out*>(g.d) + prob.d_off;
  const index_t sm = g.shape.d_sm;
  Out* row0 = d + index_t(r0) * sm;
  Out* row1 = row0 + 8 * sm;
  constexpr int kJ = kRegs / 4;  // n8 blocks: 32 (64 x 256 fragment) or 16 (64 x 128)
  if constexpr (kC) {
    if (g.c != nullptr) {
      const bool whole = row_base + 64 <= prob.m && col_base + 8 * kJ <= prob.n;
      sm90_direct_c<T, Out, kRegs>(g, prob, acc, r0, c0, row0, row1, whole);
      return;
    }
  }
  if (row_base + 64 <= prob.m && col_base + 8 * kJ <= prob.n) {
#pragma unroll
    for (int j = 0; j < kJ; ++j) {
      const int n = c0 + 8 * j;
      const float b0 = bias ? to_acc<float>(bias[n]) : 0.0f;
      const float b1 = bias ? to_acc<float>(bias[n + 1]) : 0.0f;
      store_pair<Out>(row0 + n, fmaf(acc[4 * j], alpha, b0), fmaf(acc[4 * j + 1], alpha, b1));
      store_pair<Out>(row1 + n, fmaf(acc[4 * j + 2], alpha, b0), fmaf(acc[4 * j + 3], alpha, b1));
    }
    return;
  }
  const bool in0 = r0 < prob.m, in1 = r0 + 8 < prob.m;
  // NOTE: fully unrolled with a guard, not a partial unroll with `break`: a runtime index into
  // acc[] would move the accumulators to local memory.
#pragma unroll
  for (int j = 0; j < kJ; ++j) {
    const int n = c0 + 8 * j;
    if (n >= prob.n) continue;
    const bool pair = n + 1 < prob.n;
    const float b0 = bias ? to_acc<float>(bias[n]) : 0.0f;
    const float b1 = bias && pair ? to_acc<float>(bias[n + 1]) : 0.0f;
    const float v[4] = {fmaf(acc[4 * j], alpha, b0), fmaf(acc[4 * j + 1], alpha, b1),
                        fmaf(acc[4 * j + 2], alpha, b0), fmaf(acc[4 * j + 3], alpha, b1)};
    if (pair) {
      if (in0) store_pair<Out>(row0 + n, v[0], v[1]);
      if (in1) store_pair<Out>(row1 + n, v[2], v[3]);
    } else {
      if (in0) row0[n] = from_acc<Out>(v[0]);
      if (in1) row1[n] = from_acc<Out>(v[2]);
    }
  }
}

// scaled_mm's factors: sa of row m, sb of column n (per-row / per-column or one for all).
CG_DEVICE float scale_a_of(const GemmArgs& g, int m) { return g.scale_a[g.scale_a_rows ? m : 0]; }
CG_DEVICE float scale_b_of(const GemmArgs& g, int n) { return g.scale_b[g.scale_b_cols ? n : 0]; }

// scaled_mm's epilogue from registers: D = sa * sb * acc + bias[n] (fp32 bias), one rounding.
// Any D (the TMA-store path takes the aligned ones): column pairs as one store when `pairs`
// (row-major, even row stride, aligned base: Sm90Params::direct_epilogue), else element-wise.
template <typename Out, int kRegs>
CG_DEVICE void sm90_store_tile_scaled(const GemmArgs& g, const Problem& prob, const float (&acc)[kRegs], int row_base,
                                      int col_base, int tid_in_wg, bool pairs) {
  const int warp = tid_in_wg / 32, lane = tid_in_wg % 32;
  const int r0 = row_base + warp * 16 + lane / 4;
  const int c0 = col_base + 2 * (lane % 4);
  const bool in0 = r0 < prob.m, in1 = r0 + 8 < prob.m;
  const float sa0 = in0 ? scale_a_of(g, r0) : 0.0f;
  const float sa1 = in1 ? scale_a_of(g, r0 + 8) : 0.0f;
  const float* bias = static_cast<const float*>(g.bias);
  Out* row0 = static_cast<Out*>(g.d) + prob.d_off + index_t(r0) * g.shape.d_sm;
  Out* row1 = row0 + 8 * g.shape.d_sm;  // D is row-major (a fresh (M, N) tensor)
#pragma unroll
  for (int j = 0; j < kRegs / 4; ++j) {
    const int n = c0 + 8 * j;
    if (n >= prob.n) continue;
    const bool has1 = n + 1 < prob.n;
    const float sb0 = scale_b_of(g, n), sb1 = has1 ? scale_b_of(g, n + 1) : 0.0f;
    const float b0 = bias ? bias[n] : 0.0f, b1 = bias && has1 ? bias[n + 1] : 0.0f;
    const float v[4] = {fmaf(acc[4 * j], sa0 * sb0, b0), fmaf(acc[4 * j + 1], sa0 * sb1, b1),
                        fmaf(acc[4 * j + 2], sa1 * sb0, b0), fmaf(acc[4 * j + 3], sa1 * sb1, b1)};
    store_quad<Out>(row0, row1, n, in0, in1, has1, pairs, v);
  }
}

CG_DEVICE void named_barrier_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

// One thread's TMA store of the 64-row box `buf` at (column c0, row_abs) of D; nothing past column n.
CG_DEVICE void sm90_tma_store_box(const uint8_t* buf, const CUtensorMap* map_d, bool d_3d, int group, int row_abs,
                                  int c0, int n) {
  if (c0 < n) {
    if (d_3d) sm90::tma_store_3d(map_d, buf, c0, row_abs, group);
    else sm90::tma_store_2d(map_d, buf, c0, row_abs);
  }
}

// The end of a TMA-store epilogue's slice: the warpgroup's shared-memory writes of `buf` made
// visible to the async proxy, then one thread stores the box (sm90_tma_store_box) and commits it
// as one bulk group (the buffer's next writer waits for it).
CG_DEVICE void sm90_tma_store_slice(const uint8_t* buf, const CUtensorMap* map_d, bool d_3d, int group, int row_abs,
                                    int c0, int n, int tid_in_wg, int barrier_id) {
  sm90::fence_proxy_async_shared();  // the writes, before TMA (async proxy) reads them
  named_barrier_sync(barrier_id, 128);
  if (tid_in_wg == 0) {
    sm90_tma_store_box(buf, map_d, d_3d, group, row_abs, c0, n);
    sm90::bulk_commit_group();
  }
}

// beta * C by TMA (Sm90Params::tma_load_c): a warpgroup's 64-row slices of C, each loaded into the TMA-store
// buffer its D slice will leave from, in D's 128-byte swizzle (the map's boxes are D's: 64 rows x 64 16-bit
// columns). Thread 0 issues the loads; every thread waits on the buffer's barrier with the parity in its copy of
// the warp's phase word (bit b: buffer b's next load; loads and waits skip the same slices, those past N, so the
// copies agree), which lane 0 writes back as the tile's epilogue ends.
struct Sm90CSlices {
  const CUtensorMap* map;
  uint64_t* bars;   // one per buffer (the storage's c_full[consumer])
  uint32_t* phase;  // the warps' phase words (the storage's c_phase[consumer])
  int row;          // the warpgroup's first row of C (one dense problem)
  // (thread 0) the slice at column `col` into buffer b
  CG_DEVICE void load(uint8_t* buf, int b, int col) const {
    sm90::mbarrier_arrive_expect_tx(&bars[b], 64 * 128);
    sm90::tma_load_2d(buf, map, &bars[b], col, row);
  }
  CG_DEVICE void wait(int b, uint32_t& phase) const {
    sm90::mbarrier_wait(&bars[b], (phase >> b) & 1u);
    phase ^= 1u << b;
  }
};

// (thread 0, as a tile starts: before its mainloop, so the loads land under it) the tile's first C slices, one per
// TMA-store buffer, once this warpgroup's stores of its last tile have read the buffers.
template <class Cfg>
CG_DEVICE void sm90_prefetch_c(const Sm90CSlices& cs, uint8_t (*bufs)[64 * 128], int col_base, int n) {
  sm90::bulk_wait_group_read<0>();
#pragma unroll
  for (int b = 0; b < Cfg::kEpiBuffers && b < Cfg::kBlockN / 64; ++b) {
    if (col_base + 64 * b < n) cs.load(bufs[b], b, col_base + 64 * b);
  }
}

// Fused epilogue of one consumer warpgroup, staged through shared memory 32 columns at a time.
// wgmma's accumulator layout gives thread (warp w, lane l) rows 16w + l/4 (+8) and column pairs
// 8j + 2(l%4) of its 64 x 256 slice; each slice goes to smem in that layout, then the
// warpgroup reads it back row-wise and applies the fusion functor in a compact (not unrolled)
// loop with 4-element vector stores.
// NOTE: applying the functor straight from registers unrolls it 128 times per thread (~40K
// SASS instructions); the instruction fetch of that code dominated the whole kernel.
// epi: the scratch (float[64][Sm90EpilogueCols + 4]) as a shared-space address. NOTE: a generic pointer was a 64-bit
// value the kernel held across its whole tile loop, and its stores generic ones; one register of it spilled (4 bytes,
// in the exact-GELU copy of the 128x256 cooperative kernel with an MN-major B, at 232 registers).
template <typename T, int kRegs>
CG_DEVICE void sm90_store_tile(const GemmArgs& g, const Problem& prob, const float (&acc)[kRegs], uint32_t epi,
                               int row_base, int col_base, int tid_in_wg, int barrier_id) {
  using Epi = SimtEpilogue<T>;
  constexpr int kPitch = (Sm90EpilogueCols + 4) * 4;  // bytes per scratch row
  const int warp = tid_in_wg / 32;
  const int lane = tid_in_wg % 32;
  constexpr int kChunkJ = Sm90EpilogueCols / 8;  // n8 blocks per chunk
  // The scratch shares its shared memory with the TMA stores' buffers, which a deferred store of
  // this warpgroup's previous tile may still be reading (cooperative launches, kDefer).
  if (tid_in_wg == 0) sm90::bulk_wait_group_read<0>();
#pragma unroll
  for (int chunk = 0; chunk < 2 * kRegs / Sm90EpilogueCols; ++chunk) {
    named_barrier_sync(barrier_id, 128);  // the previous chunk has been read
#pragma unroll
    for (int jj = 0; jj < kChunkJ; ++jj) {
      const int j = chunk * kChunkJ + jj;
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int r = warp * 16 + lane / 4 + 8 * h;
        const int cc = 8 * jj + 2 * (lane % 4);
        asm volatile("st.shared.v2.f32 [%0], {%1, %2};\n" ::"r"(epi + uint32_t(r * kPitch + cc * 4)),
                     "f"(acc[4 * j + 2 * h]), "f"(acc[4 * j + 2 * h + 1])
                     : "memory");
      }
    }
    named_barrier_sync(barrier_id, 128);
    const int n_chunk = col_base + chunk * Sm90EpilogueCols;
#pragma unroll 1
    for (int idx = tid_in_wg; idx < 64 * (Sm90EpilogueCols / 4); idx += 128) {
      const int r = idx / (Sm90EpilogueCols / 4);
      const int c4 = (idx % (Sm90EpilogueCols / 4)) * 4;
      const int m = row_base + r;
      const int n = n_chunk + c4;
      if (m >= prob.m || n >= prob.n) continue;
      float4 x;
      asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];\n"
                   : "=f"(x.x), "=f"(x.y), "=f"(x.z), "=f"(x.w)
                   : "r"(epi + uint32_t(r * kPitch + c4 * 4))
                   : "memory");
      const Acc4 raw{{x.x, x.y, x.z, x.w}};
      Epi::store4(g, prob, m, n, raw.v);
    }
  }
}

// TMA-store epilogue for D = act(alpha * acc (+ bias)) (row-major D that TMA can address, no
// C): the warpgroup writes 64 x 128-byte slices of D (64 bf16 or 32 fp32 columns) into swizzled
// shared memory, conflict-free, and one thread stores each slice with one TMA instruction while
// the warpgroup fills the next buffer. D's bounds clip the boxes.
// kAct: the activation, applied from registers (activation_fast: a few instructions each, so the
// 128 unrolled copies stay small; a tanhf or erff per element was what made the staged paths
// below necessary). kScaled: scaled_mm's D = sa * sb * acc + bias[n] (fp32 bias; dense, so
// row_abs is the row). kColAdd: whether a per-column addend (bias) is read at all; without it
// the tile's code has no loads and no column checks. kColMul (scaled_mm): whether scale_b is a
// per-column vector; without it the one scale is read once (per column, its loads, index
// selects and checks were ~60% of the epilogue's instructions: H100, fp8 4096^3, ncu).
// NOTE: a 16-bit D is written with stmatrix (four 8 x 8 blocks, two n8 accumulator blocks, per
// instruction) to shared-space addresses: the per-pair generic stores, loads and checks made the
// epilogue ~760 instructions per warp and tile, 6% of the consumers' time at 8192x4096x4096
// (ncu source counters; a fifth of it instruction-fetch stalls), all of it with the tensor
// cores idle (both warpgroups run their epilogues at once).
// kC: D = act(alpha * acc + beta * C (+ bias)), a 16-bit D, C's slices loaded by TMA into the buffers (cs; the
// first ones by sm90_prefetch_c as the tile started): each pair of n8 blocks reads its C with one ldmatrix from
// the addresses its stmatrix then writes D to, so C and D share the buffer and the slice needs no barrier of its
// own. NOTE: replaced the fused path's element-wise C loads (one 2-byte load per element, each waited for) for these
// launches: ten shapes against torch.addmm, geomean 0.515 -> 0.921x, 4096^3 0.60 -> 1.03x (H200; benchmarks/RESULTS.md,
// fortieth session).
template <class Cfg, typename T, typename Out, bool kScaled = false, Activation kAct = Activation::kNone,
          bool kColAdd = true, bool kColMul = true, bool kC = false>
CG_DEVICE void sm90_store_tile_tma(const GemmArgs& g, const Problem& prob, const float (&acc)[Cfg::kBlockN / 2],
                                   uint8_t (*bufs)[64 * 128], const CUtensorMap* map_d, bool d_3d, int group,
                                   int row_abs, int col_base, int tid_in_wg, int barrier_id,
                                   const Sm90CSlices* cs = nullptr) {
  constexpr bool k16 = sizeof(Out) == 2;
  static_assert(!kC || (k16 && !kScaled), "C by TMA: 16-bit D, not scaled_mm");
  [[maybe_unused]] const float beta = float(g.beta);
  uint32_t c_phase = 0;
  if constexpr (kC) {
    __syncwarp();
    c_phase = cs->phase[tid_in_wg / 32];
  }
  constexpr int kCols = 128 / int(sizeof(Out));  // columns per slice
  constexpr int kJ = kCols / 8;                    // n8 accumulator blocks per slice
  // NOTE: three consumer warpgroups (192 x 192) run under a 128-register cap: there ptxas hoisted the lane's
  // swizzled stmatrix offsets out of the tile loop and spilled two of them (20 bytes stored, 84 loaded, reloaded in
  // each epilogue copy). The lane read as %laneid (volatile: not hoisted) keeps them inside the epilogue: 4 bytes
  // left, in one activation's copy. Other configs keep tid_in_wg % 32 (their code unchanged).
  int lane;
  if constexpr (Cfg::kConsumers == 3) lane = sm90::lane_id_volatile();
  else lane = tid_in_wg % 32;
  const int warp = tid_in_wg / 32;
  const int r0 = warp * 16 + lane / 4;  // row in the 64-row slice (and r0 + 8)
  const float alpha = float(g.alpha);
  const T* bias = g.bias ? static_cast<const T*>(g.bias) + prob.bias_off : nullptr;
  float row_scale[2] = {alpha, alpha};
  if constexpr (kScaled) {
    // Rows past the problem are clipped by the store; clamp their scale index instead.
#pragma unroll
    for (int h = 0; h < 2; ++h) row_scale[h] = scale_a_of(g, min(row_abs + r0 + 8 * h, prob.m - 1));
    if constexpr (!kColMul) {
      const float sb = g.scale_b[0];
#pragma unroll
      for (int h = 0; h < 2; ++h) row_scale[h] *= sb;
    }
  }
  // stmatrix: lane l addresses row l % 8 (+ 8 for the odd matrices) of n8 block (first + l / 16);
  // in the 128-byte swizzle, 16-byte chunk c of row r sits at chunk c ^ (r % 8), and r % 8 = l % 8.
  const int sm_row = warp * 16 + lane % 8 + 8 * ((lane / 8) % 2);
  const int sm_blk = lane / 16;
  constexpr int kChunks = Cfg::kBlockN / kCols;
  // A 16-bit bias (no scaled_mm): each slice's bias pairs for this thread (columns n, n + 1 of
  // its n8 blocks), loaded in one batch at the slice's start, packed two per register.
  // NOTE: loaded per group of 4 n8 blocks just before use, each group waited for its own round
  // trip to L2 (the stmatrix and barriers in between keep the compiler from hoisting the next
  // group's loads): 8 round trips per tile made bias cost 8% and bias + GELU 13% over plain mm
  // (ncu at fixed clocks, 8192x14336x4096, H100). Loading the next slice's pairs a slice ahead
  // spilled 8 bytes (the kernel's 168-register cap).
  constexpr bool kPreBias = kColAdd && !kScaled && sizeof(T) == 2;
  const uint16_t* bias16 = reinterpret_cast<const uint16_t*>(bias);
#pragma unroll
  for (int chunk = 0; chunk < kChunks; ++chunk) {
    if constexpr (kC) {
      if (col_base + chunk * kCols >= prob.n) break;  // (no C slice was loaded; nothing to store)
    }
    uint32_t bias_pk[kPreBias ? kJ : 1];
    if constexpr (kPreBias) {
#pragma unroll
      for (int jj = 0; jj < kJ; ++jj) {
        const int n = col_base + (chunk * kJ + jj) * 8 + 2 * (lane % 4);
        const uint32_t lo = bias16 && n < prob.n ? bias16[n] : 0u;
        const uint32_t hi = bias16 && n + 1 < prob.n ? bias16[n + 1] : 0u;
        bias_pk[jj] = lo | (hi << 16);
      }
    }
    // scaled_mm with a per-column scale_b (and its fp32 bias): the slice's pairs in one batch too,
    // issued before the buffer wait and barrier below. NOTE: loaded per group of four n8 blocks,
    // each group waited for its own round trip: row-wise scales cost 8% over per-tensor ones
    // (H100, 8192x14336x4096).
    constexpr bool kPreScale = kScaled && kColMul;
    float sb_pre[kPreScale ? kJ : 1][2], fb_pre[kPreScale && kColAdd ? kJ : 1][2];
    if constexpr (kPreScale) {
      const float* fbias = static_cast<const float*>(g.bias);
#pragma unroll
      for (int jj = 0; jj < kJ; ++jj) {
        const int n = col_base + (chunk * kJ + jj) * 8 + 2 * (lane % 4);
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const bool in = n + e < prob.n;
          sb_pre[jj][e] = in ? scale_b_of(g, n + e) : 0.0f;
          if constexpr (kColAdd) fb_pre[jj][e] = in ? fbias[n + e] : 0.0f;
        }
      }
    }
    uint8_t* buf = bufs[chunk % Cfg::kEpiBuffers];
    const uint32_t buf_s = sm90::smem_addr(buf) + uint32_t(sm_row * 128);
    if constexpr (kC) {
      cs->wait(chunk % Cfg::kEpiBuffers, c_phase);  // C is in (and the last store has read the buffer)
    } else {
      // The store that last read this buffer has finished reading it (bulk groups retire in order).
      if (tid_in_wg == 0) sm90::bulk_wait_group_read<Cfg::kEpiBuffers - 1>();
      named_barrier_sync(barrier_id, 128);
    }
    // Four n8 blocks at a time: their per-column operands (fp32 multiplier and addend of columns
    // n, n + 1; scaled_mm's come from the slice's batch above) as one batch of loads, then their
    // shared-memory stores. NOTE: the stores may
    // alias global memory as far as the compiler knows, so it does not hoist a load above an
    // earlier store: loaded one by one, every column paid a round trip to L1 / L2 (bias + GELU
    // cost 9% over plain mm at 4096^3). Four blocks, not the whole slice: registers.
    constexpr int kG = kJ < 4 ? kJ : 4;
#pragma unroll
    for (int j0 = 0; j0 < kJ; j0 += kG) {
      float mul[kG][2], add[kG][2];
#pragma unroll
      for (int jj = 0; jj < kG; ++jj) {
        const int n = col_base + (chunk * kJ + j0 + jj) * 8 + 2 * (lane % 4);
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const bool in = n + e < prob.n;
          mul[jj][e] = kScaled && !kColMul ? 1.0f : alpha;  // (row_scale holds a single scale_b)
          add[jj][e] = 0.0f;
          if constexpr (kScaled) {
            if constexpr (kColMul) mul[jj][e] = sb_pre[j0 + jj][e];
            if constexpr (kColAdd) add[jj][e] = fb_pre[j0 + jj][e];
          } else if constexpr (kPreBias) {
            const uint32_t bits = (bias_pk[j0 + jj] >> (16 * e)) & 0xFFFFu;
            add[jj][e] = sm90::half_bits_to_float<T>(uint16_t(bits));
          } else if constexpr (kColAdd) {
            add[jj][e] = bias && in ? to_acc<float>(bias[n + e]) : 0.0f;
          }
        }
      }
      // The value of accumulator pair (block jj, row half h), column e; kC: `cp` is its C pair (16-bit bits).
      auto value = [&](int jj, int h, int e, uint32_t cp = 0u) {
        const int j = chunk * kJ + j0 + jj;
        const float m = kScaled ? row_scale[h] * mul[jj][e] : mul[jj][e];
        float x = fmaf(acc[4 * j + 2 * h + e], m, add[jj][e]);
        if constexpr (kC) x = fmaf(beta, sm90::half_bits_to_float<T>(uint16_t(cp >> (16 * e))), x);
        return activation_fast<kAct>(x);
      };
      if constexpr (k16) {
#pragma unroll
        for (int jj = 0; jj < kG; jj += 2) {
          const int blk = j0 + jj + sm_blk;  // this lane's n8 block in the slice
          const uint32_t addr = buf_s + uint32_t(((blk ^ (lane % 8)) * 16));
          uint32_t c4[4] = {0u, 0u, 0u, 0u};  // (kC) C's pairs in the order stmatrix takes D's
          if constexpr (kC) sm80::ldmatrix_x4(c4, addr);
          sm90::stmatrix_x4(addr, sm90::pack_pair<Out>(value(jj, 0, 0, c4[0]), value(jj, 0, 1, c4[0])),
                            sm90::pack_pair<Out>(value(jj, 1, 0, c4[1]), value(jj, 1, 1, c4[1])),
                            sm90::pack_pair<Out>(value(jj + 1, 0, 0, c4[2]), value(jj + 1, 0, 1, c4[2])),
                            sm90::pack_pair<Out>(value(jj + 1, 1, 0, c4[3]), value(jj + 1, 1, 1, c4[3])));
        }
      } else {
#pragma unroll
        for (int jj = 0; jj < kG; ++jj) {
          const int byte = (8 * (j0 + jj) + 2 * (lane % 4)) * int(sizeof(Out));  // in the 128-byte row
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            const int r = r0 + 8 * h;
            uint8_t* dst = buf + r * 128 + (((byte / 16) ^ (r % 8)) * 16) + byte % 16;
            store_pair<Out>(reinterpret_cast<Out*>(dst), value(jj, h, 0), value(jj, h, 1));
          }
        }
      }
    }
    sm90_tma_store_slice(buf, map_d, d_3d, group, row_abs, col_base + chunk * kCols, prob.n, tid_in_wg, barrier_id);
    if constexpr (kC) {
      // The buffer's next C slice, once the store just issued has read it (thread 0 issued both).
      const int next = col_base + (chunk + Cfg::kEpiBuffers) * kCols;
      if (tid_in_wg == 0 && chunk + Cfg::kEpiBuffers < kChunks && next < prob.n) {
        sm90::bulk_wait_group_read<0>();
        cs->load(buf, chunk % Cfg::kEpiBuffers, next);
      }
    }
  }
  if constexpr (kC) {
    __syncwarp();
    if (tid_in_wg % 32 == 0) cs->phase[tid_in_wg / 32] = c_phase;
  }
}

// sm90_store_tile_tma without an activation (D = alpha * acc (+ bias), or scaled_mm's): the
// bias-free launches get the copy without per-column loads.
template <class Cfg, typename T, typename Out, bool kScaled>
CG_DEVICE void sm90_store_tma_plain(const GemmArgs& g, const Problem& prob, const float (&acc)[Cfg::kBlockN / 2],
                                    uint8_t (*bufs)[64 * 128], const CUtensorMap* map_d, bool d_3d, int group,
                                    int row_abs, int col_base, int tid_in_wg, int barrier_id) {
  if (g.bias)
    sm90_store_tile_tma<Cfg, T, Out, kScaled, Activation::kNone, true>(g, prob, acc, bufs, map_d, d_3d, group,
                                                                       row_abs, col_base, tid_in_wg, barrier_id);
  else if (kScaled && !g.scale_b_cols)  // (scaled_mm only: per-tensor scale_b, read once)
    sm90_store_tile_tma<Cfg, T, Out, kScaled, Activation::kNone, false, !kScaled>(
        g, prob, acc, bufs, map_d, d_3d, group, row_abs, col_base, tid_in_wg, barrier_id);
  else
    sm90_store_tile_tma<Cfg, T, Out, kScaled, Activation::kNone, false>(g, prob, acc, bufs, map_d, d_3d, group,
                                                                        row_abs, col_base, tid_in_wg, barrier_id);
}

// A whole plain TMA-store tile (not scaled_mm's), D of type T or fp32.
template <class Cfg, typename T>
CG_DEVICE void sm90_store_tma_whole(const GemmArgs& g, const Problem& prob, const float (&acc)[Cfg::kBlockN / 2],
                                    uint8_t (*bufs)[64 * 128], const CUtensorMap* map_d, bool d_3d, int group,
                                    int row_abs, int col_base, int tid_in_wg, int barrier_id) {
  if (g.out_f32)
    sm90_store_tma_plain<Cfg, T, float, false>(g, prob, acc, bufs, map_d, d_3d, group, row_abs, col_base, tid_in_wg,
                                               barrier_id);
  else
    sm90_store_tma_plain<Cfg, T, T, false>(g, prob, acc, bufs, map_d, d_3d, group, row_abs, col_base, tid_in_wg,
                                           barrier_id);
}

// sm90_store_tile_tma with the launch's activation (16-bit D: the TMA store of the bias +
// activation epilogue, Sm90Params::tma_store_act; kC: with C loaded by TMA, Sm90Params::tma_load_c): one unrolled
// copy per activation, so the tile's elements never go through a runtime switch (kActs; else only the copy without
// one, sm90_c_acts).
template <class Cfg, typename T, bool kC = false, bool kActs = true>
CG_DEVICE void sm90_store_tile_tma_act(const GemmArgs& g, const Problem& prob, const float (&acc)[Cfg::kBlockN / 2],
                                       uint8_t (*bufs)[64 * 128], const CUtensorMap* map_d, bool d_3d, int group,
                                       int row_abs, int col_base, int tid_in_wg, int barrier_id,
                                       const Sm90CSlices* cs = nullptr) {
#define CG_SM90_TMA_ACT(A)                                                                                  \
  sm90_store_tile_tma<Cfg, T, T, false, A, true, true, kC>(g, prob, acc, bufs, map_d, d_3d, group, row_abs, \
                                                           col_base, tid_in_wg, barrier_id, cs)
  if constexpr (!kActs) {
    CG_SM90_TMA_ACT(Activation::kNone);
  } else {
    switch (g.act) {
      case Activation::kRelu: CG_SM90_TMA_ACT(Activation::kRelu); break;
      case Activation::kGelu: CG_SM90_TMA_ACT(Activation::kGelu); break;
      case Activation::kGeluTanh: CG_SM90_TMA_ACT(Activation::kGeluTanh); break;
      case Activation::kSilu: CG_SM90_TMA_ACT(Activation::kSilu); break;
      default: CG_SM90_TMA_ACT(Activation::kNone); break;
    }
  }
#undef CG_SM90_TMA_ACT
}

// TMA-store epilogue with the rest of the fusion (activation, beta * C): needs two 8 KB
// buffers per warpgroup (cooperative config). Per 64 x 128-byte slice of D: the fragments,
// with alpha and bias, go to an fp32 scratch slice (32 columns at a time); a compact loop (one
// copy of the activation code, not 128 unrolled ones: instruction cache) adds beta * C, applies
// the activation, rounds once and writes the swizzled D slice, which one thread stores by TMA.
template <class Cfg, typename T, typename Out>
CG_DEVICE void sm90_store_tile_tma_fused(const GemmArgs& g, const Problem& prob, const float (&acc)[128],
                                         uint8_t (*bufs)[64 * 128], const CUtensorMap* map_d, bool d_3d, int group,
                                         int row_abs, int row_base, int col_base, int tid_in_wg, int barrier_id) {
  static_assert(Cfg::kEpiBuffers >= 2, "scratch and output slices");
  constexpr int kCols = 128 / int(sizeof(Out));  // D columns per slice
  constexpr int kSubs = kCols / 32;              // fp32 scratch slices (32 columns) per D slice
  const int warp = tid_in_wg / 32, lane = tid_in_wg % 32;
  const int r0 = warp * 16 + lane / 4;
  const float alpha = float(g.alpha), beta = float(g.beta);
  const T* bias = g.bias ? static_cast<const T*>(g.bias) + prob.bias_off : nullptr;
  const T* c = static_cast<const T*>(g.c);
  uint8_t* scratch = bufs[0];
  uint8_t* out = bufs[1];
#pragma unroll
  for (int chunk = 0; chunk < 256 / kCols; ++chunk) {
    if (tid_in_wg == 0) sm90::bulk_wait_group_read<0>();  // the last store has read `out`
#pragma unroll
    for (int sub = 0; sub < kSubs; ++sub) {
      named_barrier_sync(barrier_id, 128);  // scratch free (and `out` free, first time)
#pragma unroll
      for (int jj = 0; jj < 4; ++jj) {
        const int j = (chunk * kCols + sub * 32) / 8 + jj;
        const int n = col_base + 8 * j + 2 * (lane % 4);
        const float b0 = bias && n < prob.n ? to_acc<float>(bias[n]) : 0.0f;
        const float b1 = bias && n + 1 < prob.n ? to_acc<float>(bias[n + 1]) : 0.0f;
        const int byte = (8 * jj + 2 * (lane % 4)) * 4;
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int r = r0 + 8 * h;
          *reinterpret_cast<float2*>(scratch + r * 128 + (((byte / 16) ^ (r % 8)) * 16) + byte % 16) =
              make_float2(fmaf(acc[4 * j + 2 * h], alpha, b0), fmaf(acc[4 * j + 2 * h + 1], alpha, b1));
        }
      }
      named_barrier_sync(barrier_id, 128);
      // NOTE: not unrolled: unrolling its 4 iterations spills (the kernel is compiled for 168
      // registers per thread, the launch bound; setmaxnreg only raises the consumers' limit).
#pragma unroll 1
      for (int idx = tid_in_wg; idx < 64 * 8; idx += 128) {
        const int r = idx / 8, q = idx % 8;  // row, 4-column group of the scratch slice
        float4 v = *reinterpret_cast<const float4*>(scratch + r * 128 + ((q ^ (r % 8)) * 16));
        float x[4] = {v.x, v.y, v.z, v.w};
        const int col = sub * 32 + 4 * q;  // column in the D slice
        const int m = row_base + r, n = col_base + chunk * kCols + col;
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          if (c != nullptr && m < prob.m && n + e < prob.n) {
            x[e] += beta * to_acc<float>(c[prob.c_off + index_t(m) * g.shape.c_sm + index_t(n + e) * g.shape.c_sn]);
          }
          x[e] = apply_activation(g.act, x[e]);
        }
        const int byte = col * int(sizeof(Out));
        uint8_t* dst = out + r * 128 + (((byte / 16) ^ (r % 8)) * 16) + byte % 16;
        store_pair<Out>(reinterpret_cast<Out*>(dst), x[0], x[1]);
        store_pair<Out>(reinterpret_cast<Out*>(dst) + 2, x[2], x[3]);
      }
    }
    sm90_tma_store_slice(out, map_d, d_3d, group, row_abs, col_base + chunk * kCols, prob.n, tid_in_wg, barrier_id);
  }
}

// grouped_mm's fused SwiGLU (kernel variant kSwiGlu): the tile's 256 columns are 128 gate
// columns and then the matching 128 up columns (the producer loads B that way), so gate column c
// and up column c sit in one thread, accumulator blocks j and j + 16. Writes, from registers,
// D[m, n0 + c] = silu(gate + bias[n]) * (up + bias[F + n]) for the F = prob.n / 2 output columns
// (column pairs as one store when `pairs`: Sm90Params::direct_epilogue).
template <typename T, typename Out>
CG_DEVICE void sm90_store_tile_swiglu(const GemmArgs& g, const Problem& prob, const float (&acc)[128], int row_base,
                                      int col_base, int tid_in_wg, bool pairs) {
  const int warp = tid_in_wg / 32, lane = tid_in_wg % 32;
  const int r0 = row_base + warp * 16 + lane / 4;
  const int c0 = col_base + 2 * (lane % 4);
  const int f = prob.n / 2;
  const bool in0 = r0 < prob.m, in1 = r0 + 8 < prob.m;
  const T* bias = g.bias ? static_cast<const T*>(g.bias) + prob.bias_off : nullptr;
  Out* row0 = static_cast<Out*>(g.d) + prob.d_off + index_t(r0) * g.shape.d_sm;
  Out* row1 = row0 + 8 * g.shape.d_sm;
#pragma unroll
  for (int j = 0; j < 16; ++j) {
    const int n = c0 + 8 * j;  // output (= gate) column
    if (n >= f) continue;
    const bool has1 = n + 1 < f;
    float bg[2] = {0.0f, 0.0f}, bu[2] = {0.0f, 0.0f};
    if (bias) {
      bg[0] = to_acc<float>(bias[n]);
      bu[0] = to_acc<float>(bias[f + n]);
      if (has1) {
        bg[1] = to_acc<float>(bias[n + 1]);
        bu[1] = to_acc<float>(bias[f + n + 1]);
      }
    }
    float v[4];
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      v[e] = apply_activation(Activation::kSilu, acc[4 * j + e] + bg[e & 1]) * (acc[4 * (j + 16) + e] + bu[e & 1]);
    }
    store_quad<Out>(row0, row1, n, in0, in1, has1, pairs, v);
  }
}

}  // namespace cutorch_gemm
