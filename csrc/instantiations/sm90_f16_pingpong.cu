// Hopper (sm_90a) instantiations: Sm90_64x256x64_Pingpong_S5 for f16, the four operand-major combinations.
// (One file per config and type: the 2-core CI build compiles them in parallel.)
#include "cutorch_gemm/device/sm90_launch.cuh"

namespace cutorch_gemm {

cudaError_t sm90_f16_pingpong(const GemmArgs& args, bool a_mn, bool b_mn, int num_sms, cudaStream_t stream) {
  return launch_sm90_layouts<Sm90_64x256x64_Pingpong_S5, __half>(args, a_mn, b_mn, num_sms, stream);
}

}  // namespace cutorch_gemm
