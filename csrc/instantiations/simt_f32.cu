// SIMT GEMM instantiations for float (closed config list: add a config by adding it here and to
// the heuristic). Four layout variants per config are compiled (A/B K-major or MN-major).
#include "cutorch_gemm/device/simt_launch.cuh"

namespace cutorch_gemm {

cudaError_t simt_gemm_f32(const GemmArgs& args, const SimtPlan& plan, void* workspace, cudaStream_t stream) {
  return run_simt<float, Simt_128x128x8_T8x8, Simt_64x64x8_T4x4>(args, plan, workspace, stream);
}

}  // namespace cutorch_gemm
