// Hopper (sm_90a) instantiation: Sm90_192x192x64_Coop_S4 (three consumer warpgroups: choose_sm90_big) for
// f16, both operands K-major.
#include "cutorch_gemm/device/sm90_launch.cuh"

namespace cutorch_gemm {

cudaError_t sm90_f16_coop192x192(const GemmArgs& args, int num_sms, cudaStream_t stream) {
  return launch_sm90<Sm90_192x192x64_Coop_S4, Sm90Mma16<__half>, __half, false, false>(args, num_sms, stream);
}

}  // namespace cutorch_gemm
