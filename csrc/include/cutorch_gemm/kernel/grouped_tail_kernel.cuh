#pragma once
// The kernel of device/grouped_tail.h: a grid-stride loop over the region past offs[-1] (read
// once per thread from global memory), one element-sized store per step; the region is usually
// empty, and then every block returns after one load.
#include <cstdint>

namespace cutorch_gemm {

template <typename Unit>
__global__ void zero_past_last_offset_kernel(Unit* __restrict__ d, int64_t rows, int64_t cols, int64_t ld,
                                             const int32_t* __restrict__ offs_last, bool along_rows) {
  const int64_t extent = along_rows ? rows : cols;
  int64_t start = offs_last ? int64_t(*offs_last) : 0;
  start = start < 0 ? 0 : (start > extent ? extent : start);
  const int64_t r0 = along_rows ? start : 0;
  const int64_t c0 = along_rows ? 0 : start;
  const int64_t w = cols - c0;
  const int64_t total = (rows - r0) * w;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = r0 + i / w;
    d[r * ld + c0 + i % w] = Unit(0);
  }
}

}  // namespace cutorch_gemm
