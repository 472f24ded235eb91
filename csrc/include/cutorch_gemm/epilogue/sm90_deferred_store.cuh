#pragma once
// The deferred store of the Hopper kernel's cooperative 16-bit launches (kernel/sm90_gemm_ws_kernel.cuh, kDefer):
//   sm90_pack_tile_for / sm90_pack_tile   a tile's D = act(alpha * acc + bias) rounded at once into packed registers
//   sm90_store_packed_slice               one 64-column slice by TMA, under the next tile's wgmma
//   sm90_store_last_tile_fresh            the CTA's last tile from the idle pipeline stages (each_slice: slice by slice)
//   sm90_pack_swiglu                      grouped_mm's fused SwiGLU tile, packed
//   sm90_store_packed_slice_direct        a slice from registers (a grouped-M group's partial last tile)

#include <cuda.h>

#include <cstdint>
#include <type_traits>

#include "cutorch_gemm/epilogue/sm90_epilogue.cuh"

namespace cutorch_gemm {

// The deferred store (cooperative 16-bit launches with a 16-bit D by TMA, no C; the kernel's
// kDefer). A tile's D = act(alpha * acc + bias) is rounded into 64 packed registers at once,
// which frees the accumulator for the next tile's wgmma; the packed tile then goes out one
// 64-column slice per k-block of the next tile (sm90_store_packed_slice), under its wgmma, so
// the tensor core waits only for this arithmetic, not for the stores and their barriers. H100, interleaved with
// torch.mm, on / off: 4096x4096x512 1.011 / 0.937, 4096^3 0.999 / 0.961, 8192x14336x4096 1.000 / 0.963; grouped dW
// (Qwen3 up, uniform) 1.295 / 1.172 against torch._grouped_mm. NOTE: it replaced the tail split (the last k-block
// as two m64n128 groups, the first half of the tile stored under the second): compiled beside this, ptxas
// serialized every wgmma (C7511), and the split never covered an MN-major A (C7511 there too, or an R2UR per wgmma).
// pk[2j + h]: the column pair of n8 block j in row half h (the fragment's order, two per register).
// kBias: bias16 (16-bit, per column, nullptr: none) is read, this thread's 32 column pairs in one
// batch of 4-byte loads before any use (one round trip to L2 per tile, not one per slice). The
// launch guarantees the pairs' alignment: bias16 4-byte aligned and n even (Sm90Params::defer_store).
// NOTE: two 2-byte loads per pair held 64 registers at once beside the accumulator and spilled.
// staged: the tile's bias pairs already in shared memory (pair p: columns col_base + 2p and the next;
// the compact cooperative kernel loads them under the tile's last wgmma group), else nullptr.
template <typename T, Activation kAct, bool kBias, int kRegs>
CG_DEVICE void sm90_pack_tile(const float (&acc)[kRegs], float alpha, const uint16_t* bias16, int col_base, int n,
                              int lane, uint32_t (&pk)[kRegs / 2], const uint32_t* staged) {
  constexpr int kJ = kRegs / 4;  // n8 blocks: columns 8j + 2 (lane % 4) and the next
  if constexpr (!kBias && kAct == Activation::kNone) {
    if (alpha == 1.0f) {  // (the common case: no multiply per value)
#pragma unroll
      for (int i = 0; i < kRegs / 2; ++i) pk[i] = sm90::pack_pair<T>(acc[2 * i], acc[2 * i + 1]);
      return;
    }
  }
  uint32_t bias_pk[kBias ? kJ : 1];
  if constexpr (kBias) {
    // The staged pairs in one branch-free run of shared loads. NOTE: tested per pair inside one loop, the staged path
    // compiled to 32 taken branches around the other path's guarded global loads (a BSSY region each).
    if (staged) {
      // (explicit shared loads: through the generic pointer they compiled to generic LD.E)
      const uint32_t staged_s = sm90::smem_addr(staged) + 4u * uint32_t(lane % 4);
#pragma unroll
      for (int j = 0; j < kJ; ++j) {
        asm volatile("ld.shared.u32 %0, [%1];\n" : "=r"(bias_pk[j]) : "r"(staged_s + 16u * uint32_t(j)));
      }
    } else {
#pragma unroll
      for (int j = 0; j < kJ; ++j) {
        const int c = col_base + 8 * j + 2 * (lane % 4);
        bias_pk[j] = bias16 && c < n ? __ldg(reinterpret_cast<const unsigned int*>(bias16 + c)) : 0u;
      }
    }
  }
#pragma unroll
  for (int i = 0; i < kRegs / 2; ++i) {
    float b0 = 0.0f, b1 = 0.0f;
    if constexpr (kBias) {
      b0 = sm90::half_bits_to_float<T>(uint16_t(bias_pk[i / 2] & 0xFFFFu));
      b1 = sm90::half_bits_to_float<T>(uint16_t(bias_pk[i / 2] >> 16));
    }
    pk[i] = sm90::pack_pair<T>(activation_fast<kAct>(fmaf(acc[2 * i], alpha, b0)),
                               activation_fast<kAct>(fmaf(acc[2 * i + 1], alpha, b1)));
  }
}

// sm90_pack_tile for the launch's epilogue: one unrolled copy per activation (any bias), and
// the plain one without bias code. Exact GELU packs through activation_fast's one-MUFU erf (with erff
// the unrolled copies spilled 16-56 bytes). false: nothing packed (no such activation).
template <typename T, int kRegs>
CG_DEVICE bool sm90_pack_tile_for(const GemmArgs& g, const Problem& prob, const float (&acc)[kRegs], int col_base,
                                  int lane, uint32_t (&pk)[kRegs / 2], const uint32_t* staged = nullptr) {
  const uint16_t* b = g.bias ? static_cast<const uint16_t*>(g.bias) + prob.bias_off : nullptr;
  const float alpha = float(g.alpha);
#define CG_SM90_PACK(A, B) sm90_pack_tile<T, A, B>(acc, alpha, b, col_base, prob.n, lane, pk, staged)
  switch (g.act) {
    case Activation::kRelu: CG_SM90_PACK(Activation::kRelu, true); break;
    case Activation::kGeluTanh: CG_SM90_PACK(Activation::kGeluTanh, true); break;
    case Activation::kGelu: CG_SM90_PACK(Activation::kGelu, true); break;
    case Activation::kSilu: CG_SM90_PACK(Activation::kSilu, true); break;
    case Activation::kNone:
      if (b) CG_SM90_PACK(Activation::kNone, true);
      else CG_SM90_PACK(Activation::kNone, false);
      break;
    default: return false;
  }
#undef CG_SM90_PACK
  return true;
}

// The first tile column of slice kSlice of a kBlockN-wide tile: 64 kSlice, but the last slice of a width that
// is not a multiple of 64 (240) ends at the tile's edge instead, so it starts inside the slice before and stores
// those columns again, with the same values (the two stores may land in either order).
template <int kBlockN, int kSlice>
constexpr int sm90_slice_first_col() {
  static_assert(kBlockN % 8 == 0 && kBlockN >= 64 && kSlice * 64 < kBlockN, "a slice of the tile's n8 blocks");
  return kSlice * 64 + 64 <= kBlockN ? kSlice * 64 : kBlockN - 64;
}

// The warpgroup's stmatrix of slice kSlice of a packed tile into `buf` (64 rows x 128 bytes, D's 128-byte swizzle).
template <class Cfg, int kSlice, int kPk>
CG_DEVICE void sm90_stmatrix_packed_slice(const uint32_t (&pk)[kPk], uint8_t* buf, int tid_in_wg) {
  constexpr int kFirstCol = sm90_slice_first_col<Cfg::kBlockN, kSlice>();
  static_assert(kFirstCol / 4 + 16 <= kPk, "16 packed registers per slice and thread");
  const int warp = tid_in_wg / 32, lane = tid_in_wg % 32;
  // stmatrix: lane l addresses row l % 8 (+ 8 for the odd matrices) of n8 block (first + l / 16),
  // 16-byte chunk c of row r at chunk c ^ (r % 8) (see sm90_store_tile_tma).
  const int sm_row = warp * 16 + lane % 8 + 8 * ((lane / 8) % 2);
  const uint32_t buf_s = sm90::smem_addr(buf) + uint32_t(sm_row * 128);
#pragma unroll
  for (int jj = 0; jj < 8; jj += 2) {
    const int j = kFirstCol / 8 + jj;
    sm90::stmatrix_x4(buf_s + uint32_t((((jj + lane / 16) ^ (lane % 8)) * 16)), pk[2 * j], pk[2 * j + 1],
                      pk[2 * j + 2], pk[2 * j + 3]);
  }
}

// Slice kSlice (64 columns, 128 bytes of a 16-bit row) of a packed tile: stmatrix into one of
// the warpgroup's staging buffers (the 128-byte swizzle TMA reads), then one TMA store of 64 rows
// from row_abs, columns col_base + sm90_slice_first_col (D's bounds clip rows and columns past the tensor).
template <class Cfg, int kSlice, int kPk>
CG_DEVICE void sm90_store_packed_slice(const uint32_t (&pk)[kPk], uint8_t (*bufs)[64 * 128], const CUtensorMap* map_d,
                                       bool d_3d, int group, int row_abs, int col_base, int n, int tid_in_wg,
                                       int barrier_id) {
  uint8_t* buf = bufs[kSlice % Cfg::kEpiBuffers];
  // The store that last read this buffer has finished reading it (bulk groups retire in order).
  if (tid_in_wg == 0) sm90::bulk_wait_group_read<Cfg::kEpiBuffers - 1>();
  named_barrier_sync(barrier_id, 128);
  sm90_stmatrix_packed_slice<Cfg, kSlice>(pk, buf, tid_in_wg);
  constexpr int kFirstCol = sm90_slice_first_col<Cfg::kBlockN, kSlice>();
  sm90_tma_store_slice(buf, map_d, d_3d, group, row_abs, col_base + kFirstCol, n, tid_in_wg, barrier_id);
}

// The CTA's last packed tile (the kernel's end; called by every consumer warpgroup, `pending` or not): every slice
// from the idle pipeline stages, stored once all are written or (each_slice) each as soon as it is. Returns whether it
// stored (pending and then nothing is left to flush).
// Why: through the epilogue slot's kEpiBuffers buffers (sm90_store_packed_slice), a slice past the first
// kEpiBuffers waits for an earlier slice's store to read its buffer; every CTA's end exposes that chain, a launch of
// one tile per CTA the most (the fit widths' one-round launches: +1-3%, benchmarks/RESULTS.md, thirty-seventh
// session). Why the stages are free: past the barrier both consumer warpgroups have waited for their last wgmma (they
// share B's stages), and the producer loads nothing more (it walks the same work items; a 2x1 pair's multicasts
// into this CTA were all for k-blocks these consumers waited for). Warpgroup c takes kSlices 8 KB buffers of A's
// stages from stages_a + c * kSlices * 8 KB. Named barrier 3 (both warpgroups), as the grouped-K tail's zeroing.
template <class Cfg, int kSlices, int kPk>
CG_DEVICE bool sm90_store_last_tile_fresh(bool pending, const uint32_t (&pk)[kPk], void* stages_a, int consumer,
                                          const CUtensorMap* map_d, bool d_3d, int group, int row_abs, int col_base,
                                          int n, int tid_in_wg, bool each_slice = false) {
  static_assert(kSlices >= 2 && kSlices <= 4, "two to four 64-column slices");
  static_assert(Cfg::kStages * Cfg::kBlockM * 128 >= Cfg::kConsumers * kSlices * 64 * 128, "the slices fit A's stages");
  named_barrier_sync(1 + Cfg::kConsumers, 128 * Cfg::kConsumers);  // (past the per-consumer ids)
  if (!pending) return false;
  uint8_t(*bufs)[64 * 128] = reinterpret_cast<uint8_t(*)[64 * 128]>(stages_a) + consumer * kSlices;
  constexpr int kFirst[4] = {sm90_slice_first_col<Cfg::kBlockN, 0>(), sm90_slice_first_col<Cfg::kBlockN, 1>(),
                             sm90_slice_first_col<Cfg::kBlockN, kSlices >= 3 ? 2 : 0>(),
                             sm90_slice_first_col<Cfg::kBlockN, kSlices >= 4 ? 3 : 0>()};
  // Slices [j0, j1) written: fence them for TMA (async proxy) reads, then thread 0 stores them as one group.
  auto store = [&](int j0, int j1) {
    sm90::fence_proxy_async_shared();
    named_barrier_sync(1 + consumer, 128);
    if (tid_in_wg == 0) {
#pragma unroll
      for (int j = 0; j < kSlices; ++j)
        if (j >= j0 && j < j1) sm90_tma_store_box(bufs[j], map_d, d_3d, group, row_abs, col_base + kFirst[j], n);
      sm90::bulk_commit_group();
    }
  };
  sm90::fence_proxy_async_shared();  // (the stages' last accesses were the async proxy's: TMA's writes, wgmma's reads)
  // each_slice (the bare kernels): a slice's store starts under the next slice's stmatrix (2048x2048: -0.2 to -0.3 µs
  // of kernel time, H200, forty-third session).
  sm90_stmatrix_packed_slice<Cfg, 0>(pk, bufs[0], tid_in_wg);
  if (each_slice) store(0, 1);
  sm90_stmatrix_packed_slice<Cfg, 1>(pk, bufs[1], tid_in_wg);
  if (each_slice && kSlices >= 3) store(1, 2);
  if constexpr (kSlices >= 3) sm90_stmatrix_packed_slice<Cfg, kSlices >= 3 ? 2 : 0>(pk, bufs[2], tid_in_wg);
  if (each_slice && kSlices >= 4) store(2, 3);
  if constexpr (kSlices >= 4) sm90_stmatrix_packed_slice<Cfg, kSlices >= 4 ? 3 : 0>(pk, bufs[3], tid_in_wg);
  store(each_slice ? kSlices - 1 : 0, kSlices);
  return true;
}

// The fused SwiGLU's tile for the deferred store (the kernel's kSwiGlu: n8 blocks 0-15 of the
// fragment are gate columns col_base + 8j + 2 (lane % 4) (+1), blocks 16-31 the matching up
// columns): silu(gate + bias[c]) * (up + bias[f + c]) rounded to T, 32 packed registers in the
// fragment's order (pk[2j + h], j < 16). The bias pairs as one batch of 4-byte loads: the caller
// checks that bias16 is 4-byte aligned and f even (then every pair is). SiLU in its fast form
// (ex2.approx and a fast division, as the TMA activation epilogue's): the packing runs with the
// tensor core idle, and the IEEE exp and division of apply_activation took most of it.
template <typename T>
CG_DEVICE void sm90_pack_swiglu(const float (&acc)[128], const uint16_t* bias16, int f, int col_base, int lane,
                                uint32_t (&pk)[32]) {
  uint32_t bg[16], bu[16];
#pragma unroll
  for (int j = 0; j < 16; ++j) {
    const int c = col_base + 8 * j + 2 * (lane % 4);
    const bool in = bias16 && c < f;
    bg[j] = in ? __ldg(reinterpret_cast<const unsigned int*>(bias16 + c)) : 0u;
    bu[j] = in ? __ldg(reinterpret_cast<const unsigned int*>(bias16 + f + c)) : 0u;
  }
#pragma unroll
  for (int i = 0; i < 32; ++i) {
    const int j = i / 2, h = i % 2;
    float v[2];
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      const float gb = sm90::half_bits_to_float<T>(uint16_t(bg[j] >> (16 * e)));
      const float ub = sm90::half_bits_to_float<T>(uint16_t(bu[j] >> (16 * e)));
      v[e] = activation_fast<Activation::kSilu>(acc[4 * j + 2 * h + e] + gb) * (acc[4 * (j + 16) + 2 * h + e] + ub);
    }
    pk[i] = sm90::pack_pair<T>(v[0], v[1]);
  }
}

// Slice kSlice of a packed tile from registers: a grouped-M tile whose 64 rows pass the group's
// end (D's tensor map clips at the tensor's end, not at a group's, so TMA would write the next
// group's rows). `d` is the warpgroup's first row of D at column 0, `rows` how many of its 64
// rows belong to the group; this thread writes its column pairs (4 bytes: the deferred store's
// launches have 16-byte aligned D rows and a multiple of 8 columns) below n.
template <int kSlice, int kPk>
CG_DEVICE void sm90_store_packed_slice_direct(const uint32_t (&pk)[kPk], uint16_t* d, index_t sm, int rows,
                                              int col_base, int n, int tid_in_wg) {
  static_assert(kSlice * 16 + 16 <= kPk, "16 packed registers per slice and thread");
  const int warp = tid_in_wg / 32, lane = tid_in_wg % 32;
  const int r0 = warp * 16 + lane / 4;
  const bool in0 = r0 < rows, in1 = r0 + 8 < rows;
  uint16_t* row0 = d + index_t(r0) * sm;
  uint16_t* row1 = row0 + 8 * sm;
#pragma unroll
  for (int jj = 0; jj < 8; ++jj) {
    const int j = kSlice * 8 + jj;
    const int c = col_base + 8 * j + 2 * (lane % 4);
    if (c >= n) continue;
    if (in0) *reinterpret_cast<uint32_t*>(row0 + c) = pk[2 * j];
    if (in1) *reinterpret_cast<uint32_t*>(row1 + c) = pk[2 * j + 1];
  }
}

}  // namespace cutorch_gemm
