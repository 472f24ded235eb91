// Ampere-class instantiations for int8 x int8 -> int32 (mma.m16n8k32.s8, IMMA): `mm` on int8
// operands, like torch._int_mm. Two configs x four operand-major combinations.
#include "cutorch_gemm/device/sm80_launch.cuh"

namespace cutorch_gemm {

cudaError_t sm80_gemm_i8(const GemmArgs& args, const Sm80Plan& plan, void* ws, int* sem, cudaStream_t stream) {
  return run_sm80<int8_t, Sm80_128x256x128_S3, Sm80_128x128x128_S3>(args, plan, ws, sem, stream);
}

}  // namespace cutorch_gemm
