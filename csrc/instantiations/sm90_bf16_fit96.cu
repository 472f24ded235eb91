// Hopper (sm_90a) instantiation: Sm90_128x96x64_Coop_S7 (a fit-width cooperative tile) for bf16, both
// operands K-major (the only layout choose_sm90_fit gives it).
#include "cutorch_gemm/device/sm90_launch.cuh"

namespace cutorch_gemm {

cudaError_t sm90_bf16_fit96(const GemmArgs& args, int num_sms, cudaStream_t stream) {
  return launch_sm90_fit<Sm90_128x96x64_Coop_S7, __nv_bfloat16>(args, num_sms, stream);
}

}  // namespace cutorch_gemm
