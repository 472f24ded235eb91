#pragma once
// Split-K partitioning ("parallel reduction split-K" in the seeds): the K extent is cut into
// `splits` slices on block_k boundaries; each slice writes a partial accumulator tile to a
// workspace and a reduction kernel sums the slices in a fixed order (deterministic).

#include "cutorch_gemm/core/macros.h"

namespace cutorch_gemm {

struct KRange {
  int begin;  // element offset, a multiple of block_k
  int end;    // exclusive; end == begin for an empty slice
};

// k-tiles are dealt out as evenly as possible: the first (tiles % splits) slices get one more.
CG_HOST_DEVICE KRange splitk_range(int k, int block_k, int splits, int split_idx) {
  const int tiles = ceil_div(k, block_k);
  const int base = tiles / splits;
  const int extra = tiles % splits;
  const int first_tile = split_idx * base + min_of(split_idx, extra);
  const int count = base + (split_idx < extra ? 1 : 0);
  const int begin = min_of(first_tile * block_k, k);
  const int end = min_of((first_tile + count) * block_k, k);
  return KRange{begin, end};
}

// The absolute K range [begin, end) that slice `split_idx` of `splits` covers inside a problem's
// own range [k_begin, k_end) (a grouped-K group, or [0, K)); splits <= 1: the whole range.
CG_HOST_DEVICE KRange slice_k_range(int k_begin, int k_end, int block_k, int splits, int split_idx) {
  if (splits <= 1) return KRange{k_begin, k_end};
  const KRange r = splitk_range(k_end - k_begin, block_k, splits, split_idx);
  return KRange{k_begin + r.begin, k_begin + r.end};
}

}  // namespace cutorch_gemm
