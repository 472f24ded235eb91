// Launches of the MoE combine kernels (device/moe_combine.h) for every float dtype.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>

#include "cutorch_gemm/device/float_dispatch.cuh"
#include "cutorch_gemm/device/moe_combine.h"
#include "cutorch_gemm/kernel/moe_combine_kernel.cuh"

namespace cutorch_gemm {
namespace {

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// Threads per block: enough V-wide column groups for one row, at most 256, a whole warp at least.
template <int V>
int threads_for(int64_t h) {
  const int64_t groups = (h + V - 1) / V;
  return int(std::min<int64_t>(256, std::max<int64_t>(32, (groups + 31) / 32 * 32)));
}

int grid_for(int64_t blocks, int num_sms) {
  return int(std::max<int64_t>(1, std::min<int64_t>(blocks, int64_t(std::max(num_sms, 1)) * 32)));
}

template <typename T>
cudaError_t combine_t(const MoeCombineArgs& a, int num_sms, cudaStream_t stream) {
  constexpr int V = 16 / sizeof(T);
  const T* y = static_cast<const T*>(a.y);
  T* out = static_cast<T*>(a.out);
  if (a.h % V == 0 && aligned16(a.y) && aligned16(a.out)) {
    moe_combine_kernel<T, V><<<grid_for(a.tokens, num_sms), threads_for<V>(a.h), 0, stream>>>(y, a.inv, a.w, out,
                                                                                             a.tokens, a.k, a.h);
  } else {
    moe_combine_kernel<T, 1><<<grid_for(a.tokens, num_sms), threads_for<1>(a.h), 0, stream>>>(y, a.inv, a.w, out,
                                                                                             a.tokens, a.k, a.h);
  }
  return cudaGetLastError();
}

template <typename T>
cudaError_t backward_t(const MoeCombineArgs& a, int num_sms, cudaStream_t stream) {
  constexpr int V = 16 / sizeof(T);
  const T* g = static_cast<const T*>(a.grad);
  const T* y = static_cast<const T*>(a.y);
  T* gy = static_cast<T*>(a.out);
  const int64_t rows = a.tokens * a.k;
  moe_invert_kernel<<<grid_for((rows + 255) / 256, num_sms), 256, 0, stream>>>(a.inv, a.order, rows);
  if (a.h % V == 0 && aligned16(a.grad) && aligned16(a.out) && (a.grad_w == nullptr || aligned16(a.y))) {
    moe_combine_backward_kernel<T, V><<<grid_for(rows, num_sms), threads_for<V>(a.h), 0, stream>>>(
        g, y, a.order, a.w, gy, a.grad_w, a.tokens, a.k, a.h);
  } else {
    moe_combine_backward_kernel<T, 1><<<grid_for(rows, num_sms), threads_for<1>(a.h), 0, stream>>>(
        g, y, a.order, a.w, gy, a.grad_w, a.tokens, a.k, a.h);
  }
  return cudaGetLastError();
}

// launch(T{}) for the args' element type; nothing for an empty problem.
template <class Launch>
cudaError_t launch_nonempty(const MoeCombineArgs& a, Launch launch) {
  if (a.tokens == 0 || a.k == 0 || a.h == 0) return cudaSuccess;
  return launch_for_float_dtype(a.dtype, launch);
}

}  // namespace

cudaError_t moe_combine(const MoeCombineArgs& a, int num_sms, cudaStream_t stream) {
  return launch_nonempty(a, [&](auto t) { return combine_t<decltype(t)>(a, num_sms, stream); });
}

cudaError_t moe_combine_backward(const MoeCombineArgs& a, int num_sms, cudaStream_t stream) {
  return launch_nonempty(a, [&](auto t) { return backward_t<decltype(t)>(a, num_sms, stream); });
}

}  // namespace cutorch_gemm
