// Hopper (sm_90a) instantiation: Sm90_128x320x64_Coop_S3 (the 320-wide tile: choose_sm90_big) for f16,
// both operands K-major, D by TMA where the launch can (no C), else from registers.
#include "cutorch_gemm/device/sm90_launch.cuh"

namespace cutorch_gemm {

cudaError_t sm90_f16_coop320(const GemmArgs& args, int num_sms, cudaStream_t stream) {
  return launch_sm90<Sm90_128x320x64_Coop_S3, Sm90Mma16<__half>, __half, false, false>(args, num_sms, stream);
}

}  // namespace cutorch_gemm
