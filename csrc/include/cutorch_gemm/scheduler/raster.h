#pragma once
// Threadblock rasterization swizzle: maps a linear CTA index onto the (tile_m, tile_n) grid
// so that CTAs running at the same time share operand tiles in L2. Consecutive ids walk down
// a band of `group` tile-rows (M first), then move one tile-column right; bands follow each
// other along M. group = 1 is plain row-by-row order.

#include "cutorch_gemm/core/fast_divide.h"
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

// raster_tile's divisors for one tile grid, fixed for a launch (the Hopper kernels' fixed grids: Sm90Params::raster):
// the quotients become a multiply and a shift each (core/fast_divide.h).
struct RasterDivisors {
  int tiles_m = 1;
  int group = 1;                // rows of a full band
  uint32_t band_tiles = 1;      // tiles of a full band: group * tiles_n
  FastDivisor by_band;          // / band_tiles
  FastDivisor by_group;         // / group (a tile's column inside a full band)
  FastDivisor by_last;          // / the last band's rows (its column inside that band)
  FastDivisor by_grid;          // / tiles_m * tiles_n (a batched launch's problem index)
};

inline RasterDivisors make_raster_divisors(int tiles_m, int tiles_n, int group) {
  RasterDivisors r;
  if (tiles_m <= 0 || tiles_n <= 0 || group <= 0) return r;  // (no tiles: never divided)
  r.tiles_m = tiles_m;
  r.group = group;
  r.band_tiles = uint32_t(group) * uint32_t(tiles_n);
  r.by_band = make_fast_divisor(r.band_tiles);
  r.by_group = make_fast_divisor(uint32_t(group));
  const int last = tiles_m % group;
  r.by_last = make_fast_divisor(uint32_t(last == 0 ? group : last));
  r.by_grid = make_fast_divisor(uint32_t(tiles_m) * uint32_t(tiles_n));
  return r;
}

// raster_tile(linear, tiles_m, tiles_n, group) for the grid r was made for (0 <= linear < tiles_m * tiles_n).
CG_HOST_DEVICE TileCoord raster_tile_fast(int linear, const RasterDivisors& r) {
  const uint32_t band = r.by_band.divide(uint32_t(linear));
  const int first_m = int(band) * r.group;
  const bool thin = r.tiles_m - first_m < r.group;  // the last band, thinner than the others
  const uint32_t rows = uint32_t(thin ? r.tiles_m - first_m : r.group);
  const uint32_t in_band = uint32_t(linear) - band * r.band_tiles;
  const uint32_t n = (thin ? r.by_last : r.by_group).divide(in_band);
  return TileCoord{first_m + int(in_band - n * rows), int(n)};
}

// Band height: wide enough that a wave of CTAs reuses B tiles, no taller than the grid.
CG_HOST_DEVICE int raster_group_for(int tiles_m, int tiles_n) {
  if (tiles_n < 4) return tiles_m < 1 ? 1 : tiles_m;  // narrow output: plain column walk
  return min_of(8, max_of(tiles_m, 1));
}

}  // namespace cutorch_gemm
