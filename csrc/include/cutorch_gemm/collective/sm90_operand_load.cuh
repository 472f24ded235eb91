#pragma once
// The Hopper kernel's operand loads into a pipeline stage (TMA, one box per 64 rows or per K slice;
// multicast for the B tile that a 2x1 cluster shares) and the zeroing of a grouped-K tail slice.
// Used by kernel/sm90_gemm_ws_kernel.cuh.

#include <cuda.h>

#include <cstdint>

#include "cutorch_gemm/arch/sm90_cluster.cuh"
#include "cutorch_gemm/arch/sm90_tma.cuh"
#include "cutorch_gemm/core/numeric.cuh"

namespace cutorch_gemm {

// One stage's operand tiles. K-major: [rows][64 K] (one TMA box). MN-major: [rows / 64][64 K][64]
// (one box per 64-wide MN block), the layout make_desc_mn_major_sw128 describes.
// hint: the loads carry L2 cache policy `policy` (an operand read once: sm90::l2_policy_evict_first).
template <class Cfg, typename T, bool kMn, int kRows>
CG_DEVICE void sm90_load_operand(T* dst, const CUtensorMap* map, uint64_t* bar, int row, int k, int z, bool is_3d,
                                 bool hint = false, uint64_t policy = 0) {
  auto box = [&](T* to, int c0, int c1) {
    if (hint) {
      if (is_3d) sm90::tma_load_3d_hint(to, map, bar, c0, c1, z, policy);
      else sm90::tma_load_2d_hint(to, map, bar, c0, c1, policy);
    } else {
      if (is_3d) sm90::tma_load_3d(to, map, bar, c0, c1, z);
      else sm90::tma_load_2d(to, map, bar, c0, c1);
    }
  };
  if constexpr (kMn) {
#pragma unroll
    for (int j = 0; j < kRows / 64; ++j) box(dst + j * 64 * Cfg::kBlockK, row + 64 * j, k);
  } else {
    box(dst, k, row);
  }
}

// sm90_load_operand for rows [row, row + kRows) of a tile that two CTAs share, landing at `dst`
// in every CTA of `mask`. K-major: one box of kRows rows (the host encodes B's map with boxes of
// kBlockN / 2 rows for clustered launches); MN-major: kRows / 64 of the 64-wide boxes.
template <class Cfg, typename T, bool kMn, int kRows>
CG_DEVICE void sm90_load_operand_multicast(T* dst, const CUtensorMap* map, uint64_t* bar, int row, int k, int z,
                                           bool is_3d, uint16_t mask) {
  if constexpr (kMn) {
#pragma unroll
    for (int j = 0; j < kRows / 64; ++j) {
      if (is_3d) sm90::tma_load_3d_multicast(dst + j * 64 * Cfg::kBlockK, map, bar, row + 64 * j, k, z, mask);
      else sm90::tma_load_2d_multicast(dst + j * 64 * Cfg::kBlockK, map, bar, row + 64 * j, k, mask);
    }
  } else {
    if (is_3d) sm90::tma_load_3d_multicast(dst, map, bar, k, row, z, mask);
    else sm90::tma_load_2d_multicast(dst, map, bar, k, row, mask);
  }
}

// Zeroes K positions >= valid_k of `rows` rows of one operand tile (share `part` of `parts`).
// Grouped-K problems end inside a K slice; TMA fills the rest of that slice with the next
// group's K (only the tensor's own end is zero-filled), which must not enter the sum.
template <class Cfg, typename T, bool kMn>
CG_DEVICE void sm90_zero_k_tail(T* tile, int rows, int valid_k, int part, int parts) {
  constexpr int kChunks = Cfg::kBlockK * int(sizeof(T)) / 16;  // 16-byte chunks per 128-byte line
  uint8_t* base = reinterpret_cast<uint8_t*>(tile);
  const uint4 zero = make_uint4(0, 0, 0, 0);
  if constexpr (kMn) {
    // [rows / 64][K row][128 bytes]: whole K rows, swizzle or not. Thread `part` zeroes 16-byte chunk
    // part % kChunks of every (parts / kChunks)-th dead row of each 64-row block: no run-time
    // divisions (the flat index over blocks x dead rows x chunks took two per store).
    const int c = part % kChunks;
    const int step = parts / kChunks;
#pragma unroll 1
    for (int blk = 0; blk < rows / 64; ++blk) {
      uint8_t* block = base + blk * Cfg::kBlockK * 128 + c * 16;
#pragma unroll 1
      for (int r = valid_k + part / kChunks; r < Cfg::kBlockK; r += step)
        *reinterpret_cast<uint4*>(block + r * 128) = zero;
    }
  } else {
    // [row][128 bytes], logical 16-byte chunk c of row r stored at chunk c ^ (r % 8).
    constexpr int kPerChunk = 16 / int(sizeof(T));
    for (int i = part; i < rows * kChunks; i += parts) {
      const int r = i / kChunks, c = i % kChunks;
      if ((c + 1) * kPerChunk <= valid_k) continue;
      uint8_t* chunk = base + r * 128 + ((c ^ (r % 8)) * 16);
      if (c * kPerChunk >= valid_k) {
        *reinterpret_cast<uint4*>(chunk) = zero;
      } else {
        for (int e = valid_k - c * kPerChunk; e < kPerChunk; ++e) reinterpret_cast<T*>(chunk)[e] = from_acc<T>(0.0f);
      }
    }
  }
}

}  // namespace cutorch_gemm
