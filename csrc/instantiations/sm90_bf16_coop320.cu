// Hopper (sm_90a) instantiation: Sm90_128x320x64_Coop_S3 (the 320-wide tile: choose_sm90_big) for bf16,
// both operands K-major, D by TMA where the launch can (no C), else from registers.
#include "cutorch_gemm/device/sm90_launch.cuh"

namespace cutorch_gemm {

cudaError_t sm90_bf16_coop320(const GemmArgs& args, int num_sms, cudaStream_t stream) {
  return launch_sm90<Sm90_128x320x64_Coop_S3, Sm90Mma16<__nv_bfloat16>, __nv_bfloat16, false, false>(args, num_sms, stream);
}

}  // namespace cutorch_gemm
