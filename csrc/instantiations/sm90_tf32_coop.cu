// Hopper (sm_90a) tf32 instantiation: Sm90_128x256x32_Coop_S4, fp32 operands read as tf32, both K-major
// (tf32 wgmma has no transpose bits; MN-major operands go to the sm80 family).
#include "cutorch_gemm/device/sm90_launch.cuh"

namespace cutorch_gemm {

cudaError_t sm90_tf32_coop(const GemmArgs& args, bool a_mn, bool b_mn, int num_sms, cudaStream_t stream) {
  if (a_mn || b_mn) return cudaErrorNotSupported;
  return launch_sm90_tf32<Sm90_128x256x32_Coop_S4>(args, num_sms, stream);
}

}  // namespace cutorch_gemm
