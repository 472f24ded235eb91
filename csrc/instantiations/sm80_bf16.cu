// Ampere-class (cp.async + ldmatrix + mma.sync) instantiations for __nv_bfloat16: the five 16-bit
// configs, each in the four operand-major combinations. Add a config here and in
// device/sm80_configs.h (sm80_configs_for).
#include "cutorch_gemm/device/sm80_launch.cuh"

namespace cutorch_gemm {

cudaError_t sm80_gemm_bf16(const GemmArgs& args, const Sm80Plan& plan, void* ws, int* sem, cudaStream_t stream) {
  return run_sm80<__nv_bfloat16, Sm80_128x256x64_S3, Sm80_128x128x64_S3, Sm80_64x128x64_S4, Sm80_64x64x64_S5,
                  Sm80_128x128x64_S3_K2>(
      args, plan, ws, sem, stream);
}

}  // namespace cutorch_gemm
