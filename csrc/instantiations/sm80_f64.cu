// Ampere-class instantiations for double on fp64 tensor cores (DMMA, mma.m8n8k4.f64). Two
// configs x four operand-major combinations.
#include "cutorch_gemm/device/sm80_launch.cuh"

namespace cutorch_gemm {

cudaError_t sm80_gemm_f64(const GemmArgs& args, const Sm80Plan& plan, void* ws, int* sem, cudaStream_t stream) {
  return run_sm80<double, Sm80_128x64x16_S4, Sm80_64x64x16_S4>(args, plan, ws, sem, stream);
}

bool sm80_kernels_available() {
  cudaFuncAttributes attr;
  if (cudaFuncGetAttributes(&attr, sm80_gemm_kernel<Sm80_64x64x16_S4, double, false, false>) != cudaSuccess) {
    cudaGetLastError();  // clear the error of a missing image
    return false;
  }
  return true;
}

}  // namespace cutorch_gemm
