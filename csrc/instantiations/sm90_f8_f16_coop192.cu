// Hopper (sm_90a) scaled_mm instantiations: Sm90_128x192x128_Coop_S5 (192-column tiles, two n96
// partial tiles per consumer), 8-bit operands (the four e4m3 / e5m2 combinations, both K-major),
// fp16 output.
#include "cutorch_gemm/device/sm90_launch.cuh"

namespace cutorch_gemm {

cudaError_t sm90_f8_f16_coop192(const GemmArgs& args, Fp8Kind a, Fp8Kind b, int num_sms, cudaStream_t stream) {
  return launch_sm90_f8_kinds<Sm90_128x192x128_Coop_S5, __half>(args, a, b, num_sms, stream);
}

}  // namespace cutorch_gemm
