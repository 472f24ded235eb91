#pragma once
// The SwiGLU element-wise kernels of device/swiglu_pointwise.h. Each thread takes V consecutive
// columns of one row (V = 16 bytes of elements when every row start and f allow 16-byte vectors,
// else 1), a grid-stride loop covers rows x f / V. Math in fp32 (fp64 for fp64), one rounding.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "cutorch_gemm/core/numeric.cuh"

namespace cutorch_gemm {

CG_DEVICE float swiglu_sigmoid(float x) { return 1.f / (1.f + expf(-x)); }
CG_DEVICE double swiglu_sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }

// V elements of T as one aligned vector access.
template <typename T, int V>
struct alignas(sizeof(T) * V) SwigluVec { T v[V]; };

// Calls op(r, c) for every row r and every V-wide column group c of an f-wide matrix, spread
// over the grid (grid-stride loop).
template <int V, class Op>
CG_DEVICE void swiglu_for_each(int64_t rows, int64_t f, Op op) {
  const int64_t per_row = f / V;
  const int64_t total = rows * per_row;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = i / per_row;
    op(r, (i - r * per_row) * V);
  }
}

template <typename T, int V>
__global__ void swiglu_forward_kernel(const T* __restrict__ gate_up, int64_t ld, T* __restrict__ h,
                                      int64_t rows, int64_t f) {
  using A = typename AccumulatorFor<T>::type;
  swiglu_for_each<V>(rows, f, [&](int64_t r, int64_t c) {
    const SwigluVec<T, V> g = *reinterpret_cast<const SwigluVec<T, V>*>(gate_up + r * ld + c);
    const SwigluVec<T, V> u = *reinterpret_cast<const SwigluVec<T, V>*>(gate_up + r * ld + f + c);
    SwigluVec<T, V> o;
#pragma unroll
    for (int j = 0; j < V; ++j) {
      const A x = to_acc<A>(g.v[j]);
      o.v[j] = from_acc<T>(x * swiglu_sigmoid(x) * to_acc<A>(u.v[j]));
    }
    *reinterpret_cast<SwigluVec<T, V>*>(h + r * f + c) = o;
  });
}

// d gate = dh * up * s * (1 + gate * (1 - s)), d up = dh * silu(gate), s = sigmoid(gate).
template <typename T, int V>
__global__ void swiglu_backward_kernel(const T* __restrict__ gate_up, int64_t ld, const T* __restrict__ dh,
                                       int64_t ld_dh, T* __restrict__ dgu, int64_t rows, int64_t f) {
  using A = typename AccumulatorFor<T>::type;
  swiglu_for_each<V>(rows, f, [&](int64_t r, int64_t c) {
    const SwigluVec<T, V> g = *reinterpret_cast<const SwigluVec<T, V>*>(gate_up + r * ld + c);
    const SwigluVec<T, V> u = *reinterpret_cast<const SwigluVec<T, V>*>(gate_up + r * ld + f + c);
    const SwigluVec<T, V> d = *reinterpret_cast<const SwigluVec<T, V>*>(dh + r * ld_dh + c);
    SwigluVec<T, V> dg, du;
#pragma unroll
    for (int j = 0; j < V; ++j) {
      const A x = to_acc<A>(g.v[j]), y = to_acc<A>(u.v[j]), dd = to_acc<A>(d.v[j]);
      const A s = swiglu_sigmoid(x);
      dg.v[j] = from_acc<T>(dd * y * s * (A(1) + x * (A(1) - s)));
      du.v[j] = from_acc<T>(dd * x * s);
    }
    *reinterpret_cast<SwigluVec<T, V>*>(dgu + r * 2 * f + c) = dg;
    *reinterpret_cast<SwigluVec<T, V>*>(dgu + r * 2 * f + f + c) = du;
  });
}

}  // namespace cutorch_gemm
