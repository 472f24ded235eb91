#pragma once
// Launch of the Hopper skinny GEMM for one element type (included by
// csrc/instantiations/sm90_skinny_*.cu).

#include <cuda.h>

#include <type_traits>

#include "cutorch_gemm/device/launch_util.h"
#include "cutorch_gemm/device/sm90_skinny.h"
#include "cutorch_gemm/device/sm90_tma_desc.h"
#include "cutorch_gemm/kernel/sm90_skinny_kernel.cuh"

namespace cutorch_gemm {

template <typename T, int kTok>
cudaError_t launch_sm90_skinny(const GemmArgs& g, int splits, cudaStream_t stream) {
  using Smem = Sm90SkinnySmem<T, kTok>;
  constexpr int smem = int(sizeof(Smem)) + 1024;  // + the 1024-byte alignment of the ring
  static_assert(smem <= sm90_skinny_smem_bytes(kTok), "the rule's shared-memory size covers the kernel's");
  const ProblemShape& s = g.shape;
  constexpr int kRows = sm90_skinny_rows(kTok);
  const int64_t row_tiles = ceil_div(int64_t(s.n), int64_t(kRows));
  if (row_tiles > 65535 || splits < 1 || splits > kSm90SkinnyMaxSplits) return cudaErrorInvalidValue;
  constexpr CUtensorMapDataType type =
      std::is_same_v<T, __nv_bfloat16> ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  // W: N rows of K (b = W^T, K contiguous, row stride b_sn); x: M rows of K (row stride a_sm).
  // Boxes past N, M or K arrive as zeros.
  CUtensorMap tma_w, tma_x;
  if (!encode_sw128(&tma_w, type, g.b, uint64_t(s.n), uint64_t(s.k), uint64_t(s.b_sn), kRows,
                    kSm90SkinnyBlockK) ||
      !encode_sw128(&tma_x, type, g.a, uint64_t(s.m), uint64_t(s.k), uint64_t(s.a_sm), kTok, kSm90SkinnyBlockK)) {
    return cudaErrorNotSupported;
  }
  auto kernel = g.out_f32 ? sm90_skinny_kernel<T, float, kTok> : sm90_skinny_kernel<T, T, kTok>;
  cudaError_t err = ensure_dynamic_smem(reinterpret_cast<const void*>(kernel), smem);
  if (err != cudaSuccess) return err;
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(unsigned(splits), unsigned(row_tiles));
  config.blockDim = dim3(sm90_skinny_threads(kTok));
  config.dynamicSmemBytes = size_t(smem);
  config.stream = stream;
  cudaLaunchAttribute attr[1];
  if (splits > 1) {  // the K split's CTAs form one cluster (their partial tiles meet in DSMEM)
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = unsigned(splits);
    attr[0].val.clusterDim.y = 1;
    attr[0].val.clusterDim.z = 1;
    config.attrs = attr;
    config.numAttrs = 1;
  }
  const int w_hint = env_is("CUTORCH_GEMM_L2_HINT", "off") ? 0 : 1;
  err = cudaLaunchKernelEx(&config, kernel, tma_w, tma_x, g, w_hint);
  return err == cudaSuccess ? cudaGetLastError() : err;
}

template <typename T>
cudaError_t run_sm90_skinny(const GemmArgs& g, int tokens, int splits, cudaStream_t stream) {
  if (g.shape.m == 0 || g.shape.n == 0) return cudaSuccess;
  switch (tokens) {
    case 16:  return launch_sm90_skinny<T, 16>(g, splits, stream);
    case 32:  return launch_sm90_skinny<T, 32>(g, splits, stream);
    case 64:  return launch_sm90_skinny<T, 64>(g, splits, stream);
    case 128: return launch_sm90_skinny<T, 128>(g, splits, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace cutorch_gemm
