#pragma once
// The element-wise kernels' launches for every float dtype: calls launch(T{}) with T the CUDA
// type of `dtype` (__half, __nv_bfloat16, float, double). Included by .cu files only.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include "cutorch_gemm/core/types.h"

namespace cutorch_gemm {

template <class Launch>
cudaError_t launch_for_float_dtype(DType dtype, Launch launch) {
  switch (dtype) {
    case DType::kFloat16:  return launch(__half{});
    case DType::kBFloat16: return launch(__nv_bfloat16{});
    case DType::kFloat32:  return launch(float{});
    case DType::kFloat64:  return launch(double{});
    default:               return cudaErrorInvalidValue;
  }
}

}  // namespace cutorch_gemm
