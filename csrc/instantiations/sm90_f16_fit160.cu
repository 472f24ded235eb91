// Hopper (sm_90a) instantiation: Sm90_128x160x64_Coop_S5 (a fit-width cooperative tile, and its deferring twin) for f16, both
// operands K-major (the only layout choose_sm90_fit gives it).
#include "cutorch_gemm/device/sm90_launch.cuh"

namespace cutorch_gemm {

cudaError_t sm90_f16_fit160(const GemmArgs& args, int num_sms, cudaStream_t stream) {
  return launch_sm90_fit<Sm90_128x160x64_Coop_S5, __half>(args, num_sms, stream);
}

}  // namespace cutorch_gemm
