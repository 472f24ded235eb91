#pragma once
// Host entry points of the Hopper family (definitions in csrc/instantiations/sm90_*.cu).

#include <cuda_runtime_api.h>

#include "cutorch_gemm/device/gemm_args.h"
#include "cutorch_gemm/device/sm90_configs.h"

namespace cutorch_gemm {

// True when this build carries sm_90a machine code that the current device can run.
bool sm90_kernels_available();

// Dense K-major fp16/bf16 GEMM (args.batch == 1, a_sk == 1, b_sk == 1, 16-byte aligned).
cudaError_t sm90_gemm_f16(const GemmArgs& args, Sm90ConfigId config, int num_sms, cudaStream_t stream);
cudaError_t sm90_gemm_bf16(const GemmArgs& args, Sm90ConfigId config, int num_sms, cudaStream_t stream);

inline cudaError_t sm90_gemm(const GemmArgs& args, Sm90ConfigId config, int num_sms, cudaStream_t stream) {
  return args.dtype == DType::kBFloat16 ? sm90_gemm_bf16(args, config, num_sms, stream)
                                        : sm90_gemm_f16(args, config, num_sms, stream);
}

}  // namespace cutorch_gemm
