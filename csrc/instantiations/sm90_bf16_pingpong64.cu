// Hopper (sm_90a) instantiations: Sm90_64x64x64_Pingpong_S12 (the narrowest 16-bit config) for bf16, the four
// operand-major combinations.
#include "cutorch_gemm/device/sm90_launch.cuh"

namespace cutorch_gemm {

cudaError_t sm90_bf16_pingpong64(const GemmArgs& args, bool a_mn, bool b_mn, int num_sms, cudaStream_t stream) {
  return launch_sm90_layouts<Sm90_64x64x64_Pingpong_S12, __nv_bfloat16>(args, a_mn, b_mn, num_sms, stream);
}

}  // namespace cutorch_gemm
