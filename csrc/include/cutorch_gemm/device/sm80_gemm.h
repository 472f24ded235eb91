#pragma once
// Host entry points of the Ampere-class family (definitions in csrc/instantiations/sm80_*.cu).

#include <cuda_runtime_api.h>

#include <cstddef>

#include "cutorch_gemm/device/gemm_args.h"
#include "cutorch_gemm/device/sm80_configs.h"

namespace cutorch_gemm {

// True when this build carries sm_80-family machine code the current device can run.
bool sm80_kernels_available();

// Workspace of a plan: parallel split-K partials, or serial split-K partial tiles followed by
// the semaphores (int32, which must be zero on entry; the kernels leave them zero).
struct Sm80Workspace {
  size_t partial_bytes;
  size_t semaphores;  // count of int32 turn counters
};

inline Sm80Workspace sm80_workspace(const GemmArgs& args, const Sm80Plan& plan) {
  if (plan.splits <= 1 || plan.split_mode == SplitKMode::kNone) return {0, 0};
  const size_t acc = args.dtype == DType::kFloat64 ? 8 : 4;  // (int8 accumulates in int32)
  if (plan.split_mode == SplitKMode::kParallel)
    return {size_t(plan.splits) * size_t(args.batch) * size_t(args.shape.m) * size_t(args.shape.n) * acc, 0};
  const Sm80ConfigInfo& c = sm80_config_info(plan.config);
  const size_t slots = size_t(args.batch) * size_t(plan.tiles_m) * size_t(plan.tiles_n);
  return {slots * size_t(c.block_m) * size_t(c.block_n) * acc, slots};
}

// Parallel split-K can sum its partials inside the GEMM kernel (no reduction kernel, no second
// launch) when every CTA of the grid is resident at once: the slices of a tile count their
// arrivals on one int, then each sums a band of the tile's rows. The caller lends the counters:
// at least kSm80ArrivalCounters zeroed ints that no other launch uses concurrently (the kernel
// leaves them zero). Without them, or when the grid does not fit, a reduction kernel sums.
constexpr int kSm80ArrivalCounters = 4096;

// workspace: sm80_workspace(...).partial_bytes bytes; semaphores: serial split-K: .semaphores
// zeroed ints; parallel split-K: nullptr or kSm80ArrivalCounters arrival counters (above).
cudaError_t sm80_gemm_f16(const GemmArgs&, const Sm80Plan&, void* workspace, int* semaphores, cudaStream_t);
cudaError_t sm80_gemm_bf16(const GemmArgs&, const Sm80Plan&, void* workspace, int* semaphores, cudaStream_t);
cudaError_t sm80_gemm_tf32(const GemmArgs&, const Sm80Plan&, void* workspace, int* semaphores, cudaStream_t);
cudaError_t sm80_gemm_f64(const GemmArgs&, const Sm80Plan&, void* workspace, int* semaphores, cudaStream_t);
cudaError_t sm80_gemm_i8(const GemmArgs&, const Sm80Plan&, void* workspace, int* semaphores, cudaStream_t);

inline cudaError_t sm80_gemm(const GemmArgs& args, const Sm80Plan& plan, void* workspace, int* semaphores,
                             cudaStream_t stream) {
  switch (args.dtype) {
    case DType::kFloat16:  return sm80_gemm_f16(args, plan, workspace, semaphores, stream);
    case DType::kBFloat16: return sm80_gemm_bf16(args, plan, workspace, semaphores, stream);
    case DType::kFloat32:  return sm80_gemm_tf32(args, plan, workspace, semaphores, stream);
    case DType::kFloat64:  return sm80_gemm_f64(args, plan, workspace, semaphores, stream);
    case DType::kInt8:     return sm80_gemm_i8(args, plan, workspace, semaphores, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace cutorch_gemm
