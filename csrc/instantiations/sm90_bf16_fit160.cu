// Hopper (sm_90a) instantiation: Sm90_128x160x64_Coop_S5 (a fit-width cooperative tile, and its deferring twin) for bf16, the three
// layouts choose_sm90_fit gives it: both operands K-major, B MN-major, both MN-major (launch_sm90_fit).
#include "cutorch_gemm/device/sm90_launch.cuh"

namespace cutorch_gemm {

cudaError_t sm90_bf16_fit160(const GemmArgs& args, bool a_mn, bool b_mn, int num_sms, cudaStream_t stream) {
  return launch_sm90_fit<Sm90_128x160x64_Coop_S5, __nv_bfloat16>(args, a_mn, b_mn, num_sms, stream);
}

}  // namespace cutorch_gemm
