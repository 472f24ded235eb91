// Hopper (sm_90a) scaled_mm instantiations with use_fast_accum=True (Sm90MmaF8Fast: the 8-bit
// products chained in the tensor core over all of K): Sm90_64x256x128_Pingpong_S5, the four e4m3 / e5m2 pairings,
// f16 (and float) output. (One file per config and output type: the 2-core CI build compiles
// them in parallel.)
#include "cutorch_gemm/device/sm90_launch.cuh"

namespace cutorch_gemm {

cudaError_t sm90_f8fast_f16_pingpong(const GemmArgs& args, Fp8Kind a, Fp8Kind b, int num_sms, cudaStream_t stream) {
  return launch_sm90_f8_kinds<Sm90_64x256x128_Pingpong_S5, __half, Sm90MmaF8Fast>(args, a, b, num_sms, stream);
}

}  // namespace cutorch_gemm
