// Hopper skinny (M <= 128) GEMM instantiations for __half: the four token-count configs of
// device/sm90_skinny.h, each with a 16-bit or fp32 D, and the grouped (decode)
// 16-, 32- and 64-token ones (plain and SwiGLU, K- and N-contiguous weights).
#include "cutorch_gemm/device/sm90_skinny_launch.cuh"

namespace cutorch_gemm {

cudaError_t sm90_skinny_f16(const GemmArgs& g, int tokens, int splits, cudaStream_t stream) {
  return run_sm90_skinny<__half>(g, tokens, splits, stream);
}

cudaError_t sm90_grouped_skinny_f16(const GemmArgs& g, int tokens, int splits, int slots, int num_sms,
                                    bool swiglu, cudaStream_t stream) {
  return run_sm90_grouped_skinny<__half>(g, tokens, splits, slots, num_sms, swiglu, stream);
}

}  // namespace cutorch_gemm
