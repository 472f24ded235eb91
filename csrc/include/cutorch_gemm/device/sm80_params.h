#pragma once
// Params of the Ampere-class kernels: everything grid-invariant, built once per launch.

#include "cutorch_gemm/device/gemm_args.h"
#include "cutorch_gemm/device/sm80_configs.h"

namespace cutorch_gemm {

struct Sm80Params {
  GemmArgs args;
  int tiles_m;         // CTA tiles along M / N of the largest problem
  int tiles_n;
  int raster_group;    // rasterization band height
  int splits;          // split-K slices (1: none); only kBatched launches split
  SplitKMode split_mode;
  void* workspace;     // parallel: splits x batch x M x N partials; serial: batch x tiles partial tiles
  int* semaphores;     // serial: one zero-initialised turn counter per (batch entry, tile);
                       // parallel with fused_reduce: one zero-initialised arrival counter per slot
  int z_base;          // first batch entry / group of this launch (grid z is limited to 65535)
  bool rows8;          // the epilogue's rows-of-eight path may run (CUTORCH_GEMM_SM80_EPILOGUE=general: never)
  bool fused_reduce;   // parallel split-K summed by the slices themselves (co-resident grid), no second kernel
  bool l2_hint;        // Cfg::kL2EvictFirst configs: evict-first loads (CUTORCH_GEMM_L2_HINT=off: evict-normal)
};

}  // namespace cutorch_gemm
