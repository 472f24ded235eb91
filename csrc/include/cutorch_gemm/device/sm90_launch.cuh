#pragma once
// Host-side launch of the Hopper kernel: tensor maps, persistent grid, shared-memory size.
// Included only by csrc/instantiations/sm90_*.cu.

#include "cutorch_gemm/device/sm90_gemm.h"
#include "cutorch_gemm/device/sm90_tma_desc.h"
#include "cutorch_gemm/kernel/sm90_gemm_ws_kernel.cuh"

namespace cutorch_gemm {

// The tensor map of one operand. K-major: rows of K elements (A: M rows, B: N rows), boxes of
// tile-rows x 64. MN-major: rows of M (N) elements, one per k, boxes of kBlockK x 64. Stacked
// operands (batch / group index) get a third dimension.
template <class Cfg>
bool encode_operand(CUtensorMap* map, CUtensorMapDataType type, const void* base, bool mn_major, int tile_rows,
                    uint64_t mn, uint64_t k, int64_t mn_stride, int64_t k_stride, uint64_t batch,
                    int64_t batch_stride) {
  if (mn_major) {
    return encode_sw128(map, type, base, k, mn, uint64_t(k_stride), Cfg::kBlockK, 64, batch, uint64_t(batch_stride));
  }
  return encode_sw128(map, type, base, mn, k, uint64_t(mn_stride), uint32_t(tile_rows), 64, batch,
                      uint64_t(batch_stride));
}

template <class Cfg, typename T, bool kAMn, bool kBMn>
cudaError_t launch_sm90(const GemmArgs& args, int num_sms, cudaStream_t stream) {
  const ProblemShape& s = args.shape;
  const CUtensorMapDataType type =
      args.dtype == DType::kBFloat16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  const bool stacked = args.batch > 1;
  const bool a_3d = stacked && s.a_sb != 0 && (s.mode == GroupMode::kBatched || s.mode == GroupMode::kGroupedN);
  const bool b_3d = stacked && s.b_sb != 0 && (s.mode == GroupMode::kBatched || s.mode == GroupMode::kGroupedM);
  CUtensorMap tma_a, tma_b;
  if (!encode_operand<Cfg>(&tma_a, type, args.a, kAMn, Cfg::kBlockM, s.m, s.k, s.a_sm, s.a_sk,
                           a_3d ? args.batch : 0, s.a_sb) ||
      !encode_operand<Cfg>(&tma_b, type, args.b, kBMn, Cfg::kBlockN, s.n, s.k, s.b_sn, s.b_sk,
                           b_3d ? args.batch : 0, s.b_sb)) {
    return cudaErrorNotSupported;  // nothing launched: the caller falls back to SIMT
  }
  Sm90Params p{args, ceil_div(s.m, Cfg::kBlockM), ceil_div(s.n, Cfg::kBlockN), 0, a_3d, b_3d};
  p.raster_group = raster_group_for(p.tiles_m, p.tiles_n);
  // Grouped M / N tile counts live on the device; each group adds at most one partial tile.
  long long tiles = (long long)p.tiles_m * p.tiles_n * args.batch;
  if (s.mode == GroupMode::kGroupedM) tiles = (long long)(p.tiles_m + args.batch) * p.tiles_n;
  if (s.mode == GroupMode::kGroupedN) tiles = (long long)p.tiles_m * (p.tiles_n + args.batch);
  if (tiles == 0) return cudaSuccess;
  const int smem = int(sizeof(Sm90SharedStorage<Cfg, T>)) + 1024;  // + alignment slack
  auto kernel = sm90_gemm_ws_kernel<Cfg, T, kAMn, kBMn>;
  cudaError_t err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  if (err != cudaSuccess) return err;
  kernel<<<int(tiles < num_sms ? tiles : num_sms), Cfg::kThreads, smem, stream>>>(tma_a, tma_b, p);
  return cudaGetLastError();
}

// The four operand-major combinations of one config and type.
template <class Cfg, typename T>
cudaError_t launch_sm90_layouts(const GemmArgs& args, bool a_mn, bool b_mn, int num_sms, cudaStream_t stream) {
  if (a_mn) {
    return b_mn ? launch_sm90<Cfg, T, true, true>(args, num_sms, stream)
                : launch_sm90<Cfg, T, true, false>(args, num_sms, stream);
  }
  return b_mn ? launch_sm90<Cfg, T, false, true>(args, num_sms, stream)
              : launch_sm90<Cfg, T, false, false>(args, num_sms, stream);
}

}  // namespace cutorch_gemm
