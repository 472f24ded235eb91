#pragma once
// Host-side launch of one Ampere-class config: Params, grid, operand-layout variant, dynamic
// shared memory, parallel split-K reduction (in the kernel when its grid is co-resident, else a
// second kernel). Included only by csrc/instantiations/sm80_*.cu.

#include <cuda_runtime.h>

#include <cstdlib>
#include <string>
#include <type_traits>

#include "cutorch_gemm/device/simt_params.h"
#include "cutorch_gemm/device/sm80_gemm.h"
#include "cutorch_gemm/kernel/simt_gemm_kernel.cuh"  // splitk_reduce_kernel (shared by both families)
#include "cutorch_gemm/kernel/sm80_gemm_kernel.cuh"
#include "cutorch_gemm/device/launch_util.h"

namespace cutorch_gemm {

template <class Cfg, typename T>
cudaError_t launch_sm80(const GemmArgs& args, const Sm80Plan& plan, void* workspace, int* semaphores,
                        cudaStream_t stream) {
  const ProblemShape& s = args.shape;
  const long long tiles = (long long)plan.tiles_m * plan.tiles_n;
  if (tiles == 0 || args.batch == 0) return cudaSuccess;
  if (tiles > 0x7fffffffLL) return cudaErrorInvalidConfiguration;
  const int splits = plan.split_mode == SplitKMode::kNone ? 1 : plan.splits;
  Sm80Params p{args, plan.tiles_m, plan.tiles_n, plan.raster_group, splits, plan.split_mode, workspace, semaphores, 0};
  // CUTORCH_GEMM_SM80_EPILOGUE=general keeps every tile on the general store (tests, A/B).
  const char* epi = std::getenv("CUTORCH_GEMM_SM80_EPILOGUE");
  p.rows8 = !(epi && std::string(epi) == "general");
  p.fused_reduce = false;
  p.l2_hint = !env_is("CUTORCH_GEMM_L2_HINT", "off");
  // Parallel split-K summed by its own slices when the caller lent arrival counters and the
  // grid fits the GPU at once (checked per kernel below); CUTORCH_GEMM_SM80_SPLIT_REDUCE=kernel
  // keeps the reduction kernel (tests, A/B).
  const char* red = std::getenv("CUTORCH_GEMM_SM80_SPLIT_REDUCE");
  const bool try_fused = !std::is_same_v<T, int8_t> && plan.split_mode == SplitKMode::kParallel && splits > 1 &&
                         semaphores != nullptr && !(red && std::string(red) == "kernel") &&
                         (long long)tiles * args.batch <= kSm80ArrivalCounters;

  const bool a_mn = sm80_mn_major(s.a_sk, s.a_sm);
  const bool b_mn = sm80_mn_major(s.b_sk, s.b_sn);
  const int smem = sm80_smem_bytes(Cfg::kId);
  constexpr int kMaxGridZ = 65535;  // larger batches are launched in chunks
  const auto launch = [&](auto kernel) {
    cudaError_t e = ensure_dynamic_smem(reinterpret_cast<const void*>(kernel), smem);
    if (e != cudaSuccess) return e;
    if (try_fused && tiles * splits * args.batch <= resident_ctas(reinterpret_cast<const void*>(kernel),
                                                                  Cfg::kThreads, smem)) {
      // A cooperative launch: the driver refuses it (rather than running it in waves) when the
      // CTAs cannot all be resident, e.g. under an MPS share of the SMs; the slices of a tile
      // wait for each other, so waves could deadlock. (It measured as fast as a plain launch:
      // 512x512x16384 fp16 34.3 vs 34.1 us, H100.)
      p.fused_reduce = true;
      cudaLaunchAttribute attr{};
      attr.id = cudaLaunchAttributeCooperative;
      attr.val.cooperative = 1;
      cudaLaunchConfig_t cfg{};
      cfg.gridDim = dim3(unsigned(tiles), unsigned(splits), unsigned(args.batch));
      cfg.blockDim = dim3(Cfg::kThreads);
      cfg.dynamicSmemBytes = size_t(smem);
      cfg.stream = stream;
      cfg.attrs = &attr;
      cfg.numAttrs = 1;
      if (cudaLaunchKernelEx(&cfg, kernel, p) == cudaSuccess) return cudaSuccess;
      (void)cudaGetLastError();  // not sticky: fall back to the two-kernel form
      p.fused_reduce = false;
    }
    for (int z0 = 0; z0 < args.batch; z0 += kMaxGridZ) {
      p.z_base = z0;
      const dim3 grid(unsigned(tiles), unsigned(splits), unsigned(min_of(args.batch - z0, kMaxGridZ)));
      kernel<<<grid, Cfg::kThreads, smem, stream>>>(p);
      e = cudaGetLastError();
      if (e != cudaSuccess) return e;
    }
    return cudaSuccess;
  };
  cudaError_t err;
  if constexpr (Cfg::kKMajorOnly) {
    if (a_mn || b_mn) return cudaErrorNotSupported;  // the plan never sends these here
    err = launch(sm80_gemm_kernel<Cfg, T, false, false>);
  } else {
    if (!a_mn && !b_mn)     err = launch(sm80_gemm_kernel<Cfg, T, false, false>);
    else if (!a_mn)         err = launch(sm80_gemm_kernel<Cfg, T, false, true>);
    else if (!b_mn)         err = launch(sm80_gemm_kernel<Cfg, T, true, false>);
    else                    err = launch(sm80_gemm_kernel<Cfg, T, true, true>);
  }
  if (err != cudaSuccess || plan.split_mode != SplitKMode::kParallel || splits <= 1 || p.fused_reduce) return err;
  if constexpr (std::is_same_v<T, int8_t>) {
    return cudaErrorInvalidValue;  // int8 plans never split (choose_sm80_plan)
  } else {

  // The SIMT family's reduction reads the same [split][z][m][n] partial layout.
  return launch_splitk_reduce<T>(SimtParams{args, plan.tiles_m, plan.tiles_n, splits, plan.raster_group, workspace, 0},
                                  stream);
  }
}

// Runs the plan's config; `Configs...` is the closed list an instantiation file compiles.
template <typename T, class... Configs>
cudaError_t run_sm80(const GemmArgs& args, const Sm80Plan& plan, void* workspace, int* semaphores,
                     cudaStream_t stream) {
  cudaError_t err = cudaErrorInvalidValue;  // a config outside the list is a dispatch bug
  ((plan.config == Configs::kId ? (err = launch_sm80<Configs, T>(args, plan, workspace, semaphores, stream), 0) : 0),
   ...);
  return err;
}

}  // namespace cutorch_gemm
