#pragma once
// The SIMT heuristic: a pure function of (arch, dtype, shape, batch, SM count) -> plan. Host
// only; `explain` and the CPU tests call it through the binding.

#include <string>

#include "cutorch_gemm/core/types.h"
#include "cutorch_gemm/device/simt_configs.h"
#include "cutorch_gemm/scheduler/raster.h"

namespace cutorch_gemm {

struct SimtPlan {
  SimtConfigId config;
  int splits;        // split-K slices (1: no split)
  int raster_group;  // band height of the rasterization swizzle, in tiles
  int tiles_m;
  int tiles_n;
  std::string reason;
};

// Split-K pays when the output tiles leave SMs idle and every slice keeps enough K to amortise
// writing a partial tile: at least kMinKTilesPerSplit k-tiles per slice.
constexpr int kMaxSplits = 16;
constexpr int kMinKTilesPerSplit = 16;

inline SimtPlan choose_simt_plan(int sm_major, int sm_minor, DType dtype, int m, int n, int k,
                                 int batch, int num_sms, bool grouped) {
  (void)sm_major;
  (void)sm_minor;  // the SIMT path is the same on every architecture
  SimtPlan plan{};
  const auto tiles = [&](SimtConfigId id) {
    return index_t(ceil_div(m, simt_block_m(id))) * ceil_div(n, simt_block_n(id)) * batch;
  };
  if (dtype == DType::kFloat64) {
    plan.config = SimtConfigId::k64x64x8;
    plan.reason = "fp64: 4x4 thread tiles keep the double accumulators in registers";
  } else if (grouped) {
    // Per-group extents live on the device; assume the average group.
    const index_t avg = batch > 0 ? index_t(m) * n / batch : 0;
    plan.config = avg >= index_t(128) * 128 * 4 ? SimtConfigId::k128x128x8 : SimtConfigId::k64x64x8;
    plan.reason = plan.config == SimtConfigId::k128x128x8
                      ? "grouped: average group output is large, 128x128 tiles"
                      : "grouped: small average group output, 64x64 tiles waste less on edges";
  } else if (tiles(SimtConfigId::k128x128x8) >= num_sms) {
    plan.config = SimtConfigId::k128x128x8;
    plan.reason = "128x128 tiles fill all " + std::to_string(num_sms) + " SMs";
  } else {
    plan.config = SimtConfigId::k64x64x8;
    plan.reason = "128x128 tiles would leave SMs idle, 64x64 tiles";
  }
  plan.tiles_m = ceil_div(m, simt_block_m(plan.config));
  plan.tiles_n = ceil_div(n, simt_block_n(plan.config));
  plan.raster_group = raster_group_for(plan.tiles_m, plan.tiles_n);
  plan.splits = 1;

  const index_t t = tiles(plan.config);
  const int k_tiles = ceil_div(k, simt_block_k(plan.config));
  if (!grouped && t > 0 && t < num_sms && k_tiles >= 2 * kMinKTilesPerSplit) {
    const index_t want = ceil_div(index_t(2) * num_sms, t);  // about two CTAs per SM
    const index_t by_k = k_tiles / kMinKTilesPerSplit;
    const int splits = int(min_of(min_of(want, by_k), index_t(kMaxSplits)));
    if (splits > 1) {
      plan.splits = splits;
      plan.reason += "; " + std::to_string(t) + " tiles < " + std::to_string(num_sms) +
                     " SMs and K=" + std::to_string(k) + ": parallel split-K x" +
                     std::to_string(splits);
    }
  }
  return plan;
}

}  // namespace cutorch_gemm
