#pragma once
// Params of the SIMT kernels: everything grid-invariant, built once on the host per launch
// (seeds: host-side Params) and passed by value.

#include "cutorch_gemm/device/gemm_args.h"

namespace cutorch_gemm {

struct SimtParams {
  GemmArgs args;
  int tiles_m;        // CTA tiles along M / N of the largest problem
  int tiles_n;
  int splits;         // split-K slices; > 1 only for kBatched
  int raster_group;   // rasterization band height
  void* workspace;    // splits x batch x M x N partial accumulators when splits > 1
  int z_base;         // first batch entry / group of this launch (grid z is limited to 65535)
};

}  // namespace cutorch_gemm
