#pragma once
// Host-side launch of the Hopper kernel: tensor maps, persistent grid, shared-memory size.
// Included only by csrc/instantiations/sm90_*.cu.

#include "cutorch_gemm/device/sm90_gemm.h"
#include "cutorch_gemm/device/sm90_tma_desc.h"
#include "cutorch_gemm/kernel/sm90_gemm_ws_kernel.cuh"

namespace cutorch_gemm {

template <class Cfg, typename T>
cudaError_t launch_sm90(const GemmArgs& args, int num_sms, cudaStream_t stream) {
  const ProblemShape& s = args.shape;
  const CUtensorMapDataType type =
      args.dtype == DType::kBFloat16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  CUtensorMap tma_a, tma_b;
  // A: M rows of K (row stride a_sm); B: N rows of K (B is K-major: its column stride b_sn).
  if (!encode_2d_sw128(&tma_a, type, args.a, s.m, s.k, s.a_sm, Cfg::kBlockM, Cfg::kBlockK) ||
      !encode_2d_sw128(&tma_b, type, args.b, s.n, s.k, s.b_sn, Cfg::kBlockN, Cfg::kBlockK)) {
    return cudaErrorNotSupported;  // nothing launched: the caller falls back to SIMT
  }
  Sm90Params p{args, ceil_div(s.m, Cfg::kBlockM), ceil_div(s.n, Cfg::kBlockN), 0};
  p.raster_group = raster_group_for(p.tiles_m, p.tiles_n);
  const int tiles = p.tiles_m * p.tiles_n;
  if (tiles == 0) return cudaSuccess;
  const int smem = int(sizeof(Sm90SharedStorage<Cfg, T>)) + 1024;  // + alignment slack
  auto kernel = sm90_gemm_ws_kernel<Cfg, T>;
  cudaError_t err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  if (err != cudaSuccess) return err;
  kernel<<<min_of(tiles, num_sms), Cfg::kThreads, smem, stream>>>(tma_a, tma_b, p);
  return cudaGetLastError();
}

}  // namespace cutorch_gemm
