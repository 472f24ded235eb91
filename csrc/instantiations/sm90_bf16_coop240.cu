// Hopper (sm_90a) instantiation: Sm90_128x240x64_Coop_S4 (the 240-wide tile, compact deferring kernel only)
// for bf16, both operands K-major (the only layout choose_sm90_fit gives it).
#include "cutorch_gemm/device/sm90_launch.cuh"

namespace cutorch_gemm {

cudaError_t sm90_bf16_coop240(const GemmArgs& args, int num_sms, cudaStream_t stream) {
  return launch_sm90<Sm90_128x240x64_Coop_S4, Sm90Mma16<__nv_bfloat16>, __nv_bfloat16, false, false>(args, num_sms, stream);
}

}  // namespace cutorch_gemm
