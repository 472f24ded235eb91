// Hopper (sm_90a) pointer-array grouped_gemm, f16: both configs, a K-major, b K- or MN-major
// (four kernels), and the host fill of their blob.
#include "cutorch_gemm/device/sm90_launch.cuh"

namespace cutorch_gemm {

cudaError_t sm90_ptr_fill_f16(void* blob, const GemmArgs* problems, int count, Sm90ConfigId config, bool b_mn,
                            int* total_tiles) {
  using Coop = Sm90_128x256x64_Coop_S4;
  using Pingpong = Sm90_64x256x64_Pingpong_S5;
  if (config == Sm90ConfigId::kCoop128x256) {
    return b_mn ? sm90_ptr_prepare<Coop, __half, true>(blob, problems, count, total_tiles)
                : sm90_ptr_prepare<Coop, __half, false>(blob, problems, count, total_tiles);
  }
  return b_mn ? sm90_ptr_prepare<Pingpong, __half, true>(blob, problems, count, total_tiles)
              : sm90_ptr_prepare<Pingpong, __half, false>(blob, problems, count, total_tiles);
}

cudaError_t sm90_ptr_run_f16(const GemmArgs& common, const void* dev_blob, int count, int total_tiles,
                           Sm90ConfigId config, bool b_mn, int num_sms, cudaStream_t stream) {
  using Coop = Sm90_128x256x64_Coop_S4;
  using Pingpong = Sm90_64x256x64_Pingpong_S5;
  if (config == Sm90ConfigId::kCoop128x256) {
    return b_mn ? sm90_ptr_launch<Coop, __half, true>(common, dev_blob, count, total_tiles, num_sms, stream)
                : sm90_ptr_launch<Coop, __half, false>(common, dev_blob, count, total_tiles, num_sms, stream);
  }
  return b_mn ? sm90_ptr_launch<Pingpong, __half, true>(common, dev_blob, count, total_tiles, num_sms, stream)
              : sm90_ptr_launch<Pingpong, __half, false>(common, dev_blob, count, total_tiles, num_sms, stream);
}

}  // namespace cutorch_gemm
