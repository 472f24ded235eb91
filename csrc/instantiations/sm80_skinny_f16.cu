// Skinny (M <= 64) GEMM instantiations for __half: the four token-count configs of
// device/sm80_skinny.h, each with a 16-bit or fp32 D.
#include "cutorch_gemm/device/sm80_skinny_launch.cuh"

namespace cutorch_gemm {

cudaError_t sm80_skinny_f16(const GemmArgs& g, SkinnyConfigId c, cudaStream_t stream) {
  return run_skinny<__half>(g, c, stream);
}

}  // namespace cutorch_gemm
