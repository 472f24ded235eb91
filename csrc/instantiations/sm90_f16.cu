// Hopper (sm_90a) GEMM instantiations for fp16 and bf16: the closed config list.
#include "cutorch_gemm/device/sm90_launch.cuh"

namespace cutorch_gemm {

template <typename T>
cudaError_t run_sm90(const GemmArgs& args, Sm90ConfigId config, int num_sms, cudaStream_t stream) {
  switch (config) {
    case Sm90ConfigId::kCoop128x256:    return launch_sm90<Sm90_128x256x64_Coop_S4, T>(args, num_sms, stream);
    case Sm90ConfigId::kPingpong64x256: return launch_sm90<Sm90_64x256x64_Pingpong_S5, T>(args, num_sms, stream);
  }
  return cudaErrorInvalidValue;
}

cudaError_t sm90_gemm_f16(const GemmArgs& args, Sm90ConfigId config, int num_sms, cudaStream_t stream) {
  return run_sm90<__half>(args, config, num_sms, stream);
}

cudaError_t sm90_gemm_bf16(const GemmArgs& args, Sm90ConfigId config, int num_sms, cudaStream_t stream) {
  return run_sm90<__nv_bfloat16>(args, config, num_sms, stream);
}

bool sm90_kernels_available() {
  cudaFuncAttributes attr;
  if (cudaFuncGetAttributes(&attr, sm90_gemm_ws_kernel<Sm90_128x256x64_Coop_S4, __nv_bfloat16>) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky-free error of a missing image
    return false;
  }
  return attr.binaryVersion == 90;
}

}  // namespace cutorch_gemm
