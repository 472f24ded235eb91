// Launches of the SwiGLU element-wise kernels (device/swiglu_pointwise.h) for every float dtype.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>

#include "cutorch_gemm/device/float_dispatch.cuh"
#include "cutorch_gemm/device/swiglu_pointwise.h"
#include "cutorch_gemm/kernel/swiglu_pointwise_kernel.cuh"

namespace cutorch_gemm {
namespace {

constexpr int kThreads = 256;

bool aligned(const void* p, int bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

// 16-byte vectors when f, the row strides and every base pointer allow them, else single elements.
template <typename T>
bool vectorizable(const SwigluArgs& a) {
  constexpr int V = 16 / sizeof(T);
  return a.f % V == 0 && a.ld_gate_up % V == 0 && aligned(a.gate_up, 16) && aligned(a.out, 16) &&
         (a.dh == nullptr || (a.ld_dh % V == 0 && aligned(a.dh, 16)));
}

int grid_for(int64_t items, int num_sms) {
  const int64_t blocks = (items + kThreads - 1) / kThreads;
  return int(std::max<int64_t>(1, std::min<int64_t>(blocks, int64_t(std::max(num_sms, 1)) * 16)));
}

template <typename T>
cudaError_t forward_t(const SwigluArgs& a, int num_sms, cudaStream_t stream) {
  const T* gu = static_cast<const T*>(a.gate_up);
  T* h = static_cast<T*>(a.out);
  if (vectorizable<T>(a)) {
    constexpr int V = 16 / sizeof(T);
    swiglu_forward_kernel<T, V><<<grid_for(a.rows * a.f / V, num_sms), kThreads, 0, stream>>>(gu, a.ld_gate_up, h,
                                                                                              a.rows, a.f);
  } else {
    swiglu_forward_kernel<T, 1><<<grid_for(a.rows * a.f, num_sms), kThreads, 0, stream>>>(gu, a.ld_gate_up, h, a.rows,
                                                                                         a.f);
  }
  return cudaGetLastError();
}

template <typename T>
cudaError_t backward_t(const SwigluArgs& a, int num_sms, cudaStream_t stream) {
  const T* gu = static_cast<const T*>(a.gate_up);
  const T* dh = static_cast<const T*>(a.dh);
  T* dgu = static_cast<T*>(a.out);
  if (vectorizable<T>(a)) {
    constexpr int V = 16 / sizeof(T);
    swiglu_backward_kernel<T, V><<<grid_for(a.rows * a.f / V, num_sms), kThreads, 0, stream>>>(
        gu, a.ld_gate_up, dh, a.ld_dh, dgu, a.rows, a.f);
  } else {
    swiglu_backward_kernel<T, 1><<<grid_for(a.rows * a.f, num_sms), kThreads, 0, stream>>>(gu, a.ld_gate_up, dh,
                                                                                          a.ld_dh, dgu, a.rows, a.f);
  }
  return cudaGetLastError();
}

// launch(T{}) for the args' element type; nothing for an empty problem.
template <class Launch>
cudaError_t launch_nonempty(const SwigluArgs& a, Launch launch) {
  if (a.rows == 0 || a.f == 0) return cudaSuccess;
  return launch_for_float_dtype(a.dtype, launch);
}

}  // namespace

cudaError_t swiglu_forward(const SwigluArgs& a, int num_sms, cudaStream_t stream) {
  return launch_nonempty(a, [&](auto t) { return forward_t<decltype(t)>(a, num_sms, stream); });
}

cudaError_t swiglu_backward(const SwigluArgs& a, int num_sms, cudaStream_t stream) {
  return launch_nonempty(a, [&](auto t) { return backward_t<decltype(t)>(a, num_sms, stream); });
}

}  // namespace cutorch_gemm
