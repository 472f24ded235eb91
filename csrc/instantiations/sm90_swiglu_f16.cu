// Hopper (sm_90a) grouped_mm with the fused SwiGLU, f16: both configs, a K-major, b K- or
// MN-major (four kernels).
#include "cutorch_gemm/device/sm90_launch.cuh"

namespace cutorch_gemm {

cudaError_t sm90_swiglu_f16(const GemmArgs& args, Sm90ConfigId config, bool b_mn, int num_sms, cudaStream_t stream) {
  return launch_sm90_swiglu_config<__half>(args, config, b_mn, num_sms, stream);
}

}  // namespace cutorch_gemm
