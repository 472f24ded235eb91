#pragma once
// Threadblock rasterization swizzle: maps a linear CTA index onto the (tile_m, tile_n) grid
// so that CTAs running at the same time share operand tiles in L2. Consecutive ids walk down
// a band of `group` tile-rows (M first), then move one tile-column right; bands follow each
// other along M. group = 1 is plain row-by-row order.

#include "cutorch_gemm/core/macros.h"

namespace cutorch_gemm {

struct TileCoord {
  int m;
  int n;
};

// (linear >= 0, group >= 1: unsigned divisions, about half the instructions of signed ones)
CG_HOST_DEVICE TileCoord raster_tile(int linear, int tiles_m, int tiles_n, int group) {
  const unsigned band_size = unsigned(group) * unsigned(tiles_n);  // tiles in one full band
  const unsigned band = unsigned(linear) / band_size;
  const int first_m = int(band) * group;
  const unsigned rows = unsigned(min_of(tiles_m - first_m, group));  // last band may be thinner
  const unsigned in_band = unsigned(linear) - band * band_size;
  const unsigned n = in_band / rows;
  return TileCoord{first_m + int(in_band - n * rows), int(n)};
}

// Band height: wide enough that a wave of CTAs reuses B tiles, no taller than the grid.
CG_HOST_DEVICE int raster_group_for(int tiles_m, int tiles_n) {
  if (tiles_n < 4) return tiles_m < 1 ? 1 : tiles_m;  // narrow output: plain column walk
  return min_of(8, max_of(tiles_m, 1));
}

}  // namespace cutorch_gemm
