// Launch of the grouped outputs' tail zeroing (device/grouped_tail.h).
#include <algorithm>

#include "cutorch_gemm/device/grouped_tail.h"
#include "cutorch_gemm/kernel/grouped_tail_kernel.cuh"

namespace cutorch_gemm {

cudaError_t zero_past_last_offset(void* d, int64_t rows, int64_t cols, int64_t ld, int elem_bytes,
                                  const int32_t* offs_last, bool along_rows, int num_sms, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return cudaSuccess;
  constexpr int kThreads = 256;
  const int64_t most = (rows * cols + kThreads - 1) / kThreads;  // blocks for the largest possible region
  const int grid = int(std::max<int64_t>(1, std::min<int64_t>(most, int64_t(std::max(num_sms, 1)) * 8)));
  switch (elem_bytes) {
    case 2:
      zero_past_last_offset_kernel<uint16_t><<<grid, kThreads, 0, stream>>>(static_cast<uint16_t*>(d), rows, cols, ld,
                                                                            offs_last, along_rows);
      break;
    case 4:
      zero_past_last_offset_kernel<uint32_t><<<grid, kThreads, 0, stream>>>(static_cast<uint32_t*>(d), rows, cols, ld,
                                                                            offs_last, along_rows);
      break;
    case 8:
      zero_past_last_offset_kernel<uint64_t><<<grid, kThreads, 0, stream>>>(static_cast<uint64_t*>(d), rows, cols, ld,
                                                                            offs_last, along_rows);
      break;
    default:
      return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

}  // namespace cutorch_gemm
