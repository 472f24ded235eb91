#pragma once
// Host entry points of the SIMT GEMM family (declarations; the definitions live in
// csrc/instantiations/simt_<dtype>.cu, the only files that compile these kernels).

#include <cuda_runtime_api.h>

#include <cstddef>

#include "cutorch_gemm/device/gemm_args.h"
#include "cutorch_gemm/device/simt_heuristic.h"

namespace cutorch_gemm {

// Bytes of split-K workspace a launch with this plan needs (0 without split-K).
inline size_t simt_workspace_bytes(const GemmArgs& args, const SimtPlan& plan) {
  if (plan.splits <= 1) return 0;
  const size_t acc = args.dtype == DType::kFloat64 ? 8 : 4;
  return size_t(plan.splits) * size_t(args.batch) * size_t(args.shape.m) * size_t(args.shape.n) * acc;
}

cudaError_t simt_gemm_f16(const GemmArgs& args, const SimtPlan& plan, void* workspace, cudaStream_t stream);
cudaError_t simt_gemm_bf16(const GemmArgs& args, const SimtPlan& plan, void* workspace, cudaStream_t stream);
cudaError_t simt_gemm_f32(const GemmArgs& args, const SimtPlan& plan, void* workspace, cudaStream_t stream);
cudaError_t simt_gemm_f64(const GemmArgs& args, const SimtPlan& plan, void* workspace, cudaStream_t stream);

inline cudaError_t simt_gemm(const GemmArgs& args, const SimtPlan& plan, void* workspace,
                             cudaStream_t stream) {
  switch (args.dtype) {
    case DType::kFloat16:  return simt_gemm_f16(args, plan, workspace, stream);
    case DType::kBFloat16: return simt_gemm_bf16(args, plan, workspace, stream);
    case DType::kFloat32:  return simt_gemm_f32(args, plan, workspace, stream);
    case DType::kFloat64:  return simt_gemm_f64(args, plan, workspace, stream);
    case DType::kInt8:     break;  // int8 runs on tensor cores only (sm80 family)
  }
  return cudaErrorInvalidValue;
}

}  // namespace cutorch_gemm
