// Hopper (sm_90a) GEMM instantiations for fp16 and bf16: the closed config list.
#include "cutorch_gemm/device/sm90_launch.cuh"

namespace cutorch_gemm {

cudaError_t sm90_gemm_f16(const GemmArgs& args, int num_sms, cudaStream_t stream) {
  return launch_sm90<Sm90_128x256x64_Coop_S4, __half>(args, num_sms, stream);
}

cudaError_t sm90_gemm_bf16(const GemmArgs& args, int num_sms, cudaStream_t stream) {
  return launch_sm90<Sm90_128x256x64_Coop_S4, __nv_bfloat16>(args, num_sms, stream);
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
