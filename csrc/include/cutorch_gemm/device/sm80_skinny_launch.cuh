#pragma once
// Launch of the skinny GEMM for one element type (included by csrc/instantiations/sm80_skinny_*.cu).

#include "cutorch_gemm/device/launch_util.h"
#include "cutorch_gemm/device/sm80_skinny.h"
#include "cutorch_gemm/device/sm90_pdl_launch.cuh"
#include "cutorch_gemm/kernel/sm80_skinny_kernel.cuh"

namespace cutorch_gemm {

template <typename T, int kTokens, int kWarps>
cudaError_t launch_skinny(const GemmArgs& g, cudaStream_t stream) {
  const dim3 grid(unsigned(ceil_div(g.shape.n, kSkinnyRows)));
  const dim3 block(kWarps * 32);
  constexpr int smem = skinny_smem_bytes<kTokens, kWarps>();
  auto kernel = g.out_f32 ? sm80_skinny_kernel<T, float, kTokens, kWarps> : sm80_skinny_kernel<T, T, kTokens, kWarps>;
  if constexpr (smem > 48 * 1024) {  // above the default limit: opt in (once per kernel and device)
    const cudaError_t err = ensure_dynamic_smem(reinterpret_cast<const void*>(kernel), smem);
    if (err != cudaSuccess) return err;
  }
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = size_t(smem);
  config.stream = stream;
  // Programmatic dependent launch (device/sm90_pdl_launch.cuh) where the sm_90 build of this kernel runs, which
  // waits for the kernel before it before touching memory: skinny_pdl_wanted (sm80_skinny.h).
  const bool pdl = kernel_runs_sm90_code(reinterpret_cast<const void*>(kernel)) &&
                   skinny_pdl_wanted(g.shape.k, sm90_pdl_env());
  return sm90_launch_pdl(config, pdl, kernel, g);
}

template <typename T>
cudaError_t run_skinny(const GemmArgs& g, SkinnyConfigId c, cudaStream_t stream) {
  if (g.shape.m == 0 || g.shape.n == 0) return cudaSuccess;
  switch (c) {
    case SkinnyConfigId::kT8W8:   return launch_skinny<T, 8, 8>(g, stream);
    case SkinnyConfigId::kT16W8:  return launch_skinny<T, 16, 8>(g, stream);
    case SkinnyConfigId::kT32W8:  return launch_skinny<T, 32, 8>(g, stream);
    case SkinnyConfigId::kT64W8:  return launch_skinny<T, 64, 8>(g, stream);
    case SkinnyConfigId::kT8W16:  return launch_skinny<T, 8, 16>(g, stream);
    case SkinnyConfigId::kT16W16: return launch_skinny<T, 16, 16>(g, stream);
    case SkinnyConfigId::kT32W16: return launch_skinny<T, 32, 16>(g, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace cutorch_gemm
