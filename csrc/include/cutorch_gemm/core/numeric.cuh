#pragma once
// Device-side element conversions and aligned vector types (CUDA only).

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "cutorch_gemm/core/macros.h"

namespace cutorch_gemm {

// Accumulator type per element type: fp32 for 16-bit and fp32, fp64 for fp64.
template <typename T> struct AccumulatorFor { using type = float; };
template <> struct AccumulatorFor<double> { using type = double; };
template <> struct AccumulatorFor<int8_t> { using type = int32_t; };

template <typename Acc, typename T> CG_DEVICE Acc to_acc(T x) { return Acc(x); }
template <> CG_DEVICE float to_acc<float, __half>(__half x) { return __half2float(x); }
template <> CG_DEVICE float to_acc<float, __nv_bfloat16>(__nv_bfloat16 x) { return __bfloat162float(x); }

template <typename T, typename Acc> CG_DEVICE T from_acc(Acc x) { return T(x); }
template <> CG_DEVICE __half from_acc<__half, float>(float x) { return __float2half_rn(x); }
template <> CG_DEVICE __nv_bfloat16 from_acc<__nv_bfloat16, float>(float x) { return __float2bfloat16_rn(x); }

template <typename T> CG_DEVICE T zero_of() { return T(0); }
template <> CG_DEVICE __half zero_of<__half>() { return __float2half_rn(0.f); }
template <> CG_DEVICE __nv_bfloat16 zero_of<__nv_bfloat16>() { return __float2bfloat16_rn(0.f); }

// N elements moved by one (or, above 16 bytes, two) vector instructions. Only dereference at
// addresses aligned to sizeof(Vec).
template <typename T, int N>
struct alignas(sizeof(T) * N) Vec {
  T v[N];
};

template <typename T, int N>
CG_DEVICE bool is_aligned(const T* p) {
  return (reinterpret_cast<uintptr_t>(p) % sizeof(Vec<T, N>)) == 0;
}

}  // namespace cutorch_gemm
