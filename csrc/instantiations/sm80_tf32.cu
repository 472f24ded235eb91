// Ampere-class instantiations for float inputs on tf32 tensor cores (mma.m16n8k8.tf32), used
// when PyTorch's matmul precision allows tf32. Three configs x four operand-major
// combinations (128x256x32 only K-major x K-major: see its config).
#include "cutorch_gemm/device/sm80_launch.cuh"

namespace cutorch_gemm {

cudaError_t sm80_gemm_tf32(const GemmArgs& args, const Sm80Plan& plan, void* ws, int* sem, cudaStream_t stream) {
  return run_sm80<float, Sm80_128x256x32_S4, Sm80_128x128x32_S3, Sm80_64x64x32_S5>(args, plan, ws, sem, stream);
}

}  // namespace cutorch_gemm
