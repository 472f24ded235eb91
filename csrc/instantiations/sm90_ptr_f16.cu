// Hopper (sm_90a) pointer-array grouped_gemm, f16: both configs, a K-major, b K- or MN-major
// (four kernels), and the host fill of their blob.
#include "cutorch_gemm/device/sm90_launch.cuh"

namespace cutorch_gemm {

cudaError_t sm90_ptr_fill_f16(void* blob, const GemmArgs* problems, int count, Sm90ConfigId config, bool b_mn,
                            int* total_tiles) {
  return sm90_ptr_fill_typed<__half>(blob, problems, count, config, b_mn, total_tiles);
}

cudaError_t sm90_ptr_run_f16(const GemmArgs& common, const void* dev_blob, int count, int total_tiles,
                           Sm90ConfigId config, bool b_mn, int num_sms, cudaStream_t stream) {
  return sm90_ptr_run_typed<__half>(common, dev_blob, count, total_tiles, config, b_mn, num_sms, stream);
}

}  // namespace cutorch_gemm
