// Hopper (sm_90a) instantiation: Sm90_128x80x64_Coop_S7 (a fit-width cooperative tile) for f16, the three
// layouts choose_sm90_fit gives it: both operands K-major, B MN-major, both MN-major (launch_sm90_fit).
#include "cutorch_gemm/device/sm90_launch.cuh"

namespace cutorch_gemm {

cudaError_t sm90_f16_fit80(const GemmArgs& args, bool a_mn, bool b_mn, int num_sms, cudaStream_t stream) {
  return launch_sm90_fit<Sm90_128x80x64_Coop_S7, __half>(args, a_mn, b_mn, num_sms, stream);
}

}  // namespace cutorch_gemm
