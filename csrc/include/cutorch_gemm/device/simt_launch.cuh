#pragma once
// Host-side launch of one SIMT config: Params, grid, layout variant, split-K reduction.
// Included only by csrc/instantiations/simt_*.cu.

#include <cuda_runtime.h>

#include "cutorch_gemm/device/simt_gemm.h"
#include "cutorch_gemm/kernel/simt_gemm_kernel.cuh"

namespace cutorch_gemm {

constexpr int kMaxGridZ = 65535;  // larger batches are launched in chunks

template <class Cfg, typename T>
cudaError_t launch_simt(const GemmArgs& args, const SimtPlan& plan, void* workspace,
                        cudaStream_t stream) {
  const ProblemShape& s = args.shape;
  SimtParams p{args, plan.tiles_m, plan.tiles_n, plan.splits, plan.raster_group, workspace, 0};
  const long long tiles = (long long)plan.tiles_m * plan.tiles_n;
  if (tiles == 0 || args.batch == 0) return cudaSuccess;
  if (tiles > 0x7fffffffLL) return cudaErrorInvalidConfiguration;

  // The K-major variant of an operand is the one whose K stride is 1 (A row-major, B column-
  // major); everything else uses the MN-major thread arrangement (vector loads along MN when
  // that stride is 1, scalar loads for a fully strided view).
  const bool a_k = classify_layout(s.m, s.k, s.a_sm, s.a_sk) == Layout::kRowMajor;
  const bool b_k = classify_layout(s.k, s.n, s.b_sk, s.b_sn) == Layout::kColumnMajor;
  const auto launch = [&](auto kernel) {
    for (int z0 = 0; z0 < args.batch; z0 += kMaxGridZ) {
      p.z_base = z0;
      const dim3 grid(unsigned(tiles), unsigned(plan.splits), unsigned(min_of(args.batch - z0, kMaxGridZ)));
      kernel<<<grid, Cfg::kThreads, 0, stream>>>(p);
      const cudaError_t e = cudaGetLastError();
      if (e != cudaSuccess) return e;
    }
    return cudaSuccess;
  };
  cudaError_t err;
  if (a_k && b_k)       err = launch(simt_gemm_kernel<Cfg, T, true, true>);
  else if (a_k)         err = launch(simt_gemm_kernel<Cfg, T, true, false>);
  else if (b_k)         err = launch(simt_gemm_kernel<Cfg, T, false, true>);
  else                  err = launch(simt_gemm_kernel<Cfg, T, false, false>);
  if (err != cudaSuccess || plan.splits <= 1) return err;
  return launch_splitk_reduce<T>(p, stream);
}

// Runs the plan's config; `Configs...` is the closed list an instantiation file compiles.
template <typename T, class... Configs>
cudaError_t run_simt(const GemmArgs& args, const SimtPlan& plan, void* workspace, cudaStream_t stream) {
  cudaError_t err = cudaErrorInvalidValue;  // a config outside the list is a dispatch bug
  ((plan.config == Configs::kId ? (err = launch_simt<Configs, T>(args, plan, workspace, stream), 0) : 0), ...);
  return err;
}

}  // namespace cutorch_gemm
