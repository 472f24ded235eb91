// Skinny (M <= 64) GEMM instantiations for __nv_bfloat16: the four token-count configs of
// device/sm80_skinny.h, each with a 16-bit or fp32 D.
#include "cutorch_gemm/device/sm80_skinny_launch.cuh"

namespace cutorch_gemm {

cudaError_t sm80_skinny_bf16(const GemmArgs& g, SkinnyConfigId c, cudaStream_t stream) {
  return run_skinny<__nv_bfloat16>(g, c, stream);
}

}  // namespace cutorch_gemm
