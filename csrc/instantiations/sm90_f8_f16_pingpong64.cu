// Hopper (sm_90a) scaled_mm instantiations: Sm90_64x64x128_Pingpong_S12, 8-bit operands (the four e4m3 / e5m2
// combinations, both K-major), f16 output. (One file per config and output type: the
// 2-core CI build compiles them in parallel.)
#include "cutorch_gemm/device/sm90_launch.cuh"

namespace cutorch_gemm {

cudaError_t sm90_f8_f16_pingpong64(const GemmArgs& args, Fp8Kind a, Fp8Kind b, int num_sms, cudaStream_t stream) {
  return launch_sm90_f8_kinds<Sm90_64x64x128_Pingpong_S12, __half>(args, a, b, num_sms, stream);
}

}  // namespace cutorch_gemm
