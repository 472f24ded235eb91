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

CG_HOST_DEVICE TileCoord raster_tile(int linear, int tiles_m, int tiles_n, int group) {
  const int band_size = group * tiles_n;          // tiles in one full band
  const int band = linear / band_size;
  const int first_m = band * group;
  const int rows = min_of(tiles_m - first_m, group);  // last band may be thinner
  const int in_band = linear - band * band_size;
  return TileCoord{first_m + in_band % rows, in_band / rows};
}

// Band height: wide enough that a wave of CTAs reuses B tiles, no taller than the grid.
CG_HOST_DEVICE int raster_group_for(int tiles_m, int tiles_n) {
  if (tiles_n < 4) return tiles_m < 1 ? 1 : tiles_m;  // narrow output: plain column walk
  return min_of(8, max_of(tiles_m, 1));
}

}  // namespace cutorch_gemm
