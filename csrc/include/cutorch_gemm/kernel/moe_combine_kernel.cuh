#pragma once
// The kernels of device/moe_combine.h. One block per token (combine) or per (token, slot) pair
// (backward), grid-stride; each thread takes V consecutive columns at a time (V = 16 bytes of
// elements when h and the base pointers allow, else 1). Sums in fp32 (fp64 for fp64), in slot
// order: deterministic, no atomics.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "cutorch_gemm/core/numeric.cuh"

namespace cutorch_gemm {

template <typename T, int V>
struct alignas(sizeof(T) * V) MoeVec { T v[V]; };

template <typename T, int V>
__global__ void moe_combine_kernel(const T* __restrict__ y, const int64_t* __restrict__ inv,
                                   const float* __restrict__ w, T* __restrict__ out, int64_t tokens, int64_t k,
                                   int64_t h) {
  using A = typename AccumulatorFor<T>::type;
  const int64_t rows = tokens * k;
  for (int64_t t = blockIdx.x; t < tokens; t += gridDim.x) {
    for (int64_t c = int64_t(threadIdx.x) * V; c < h; c += int64_t(blockDim.x) * V) {
      A acc[V];
#pragma unroll
      for (int e = 0; e < V; ++e) acc[e] = A(0);
      for (int64_t j = 0; j < k; ++j) {
        const int64_t r = inv[t * k + j];
        if (r < 0 || r >= rows) continue;
        const A wj = w ? A(w[t * k + j]) : A(1);
        const MoeVec<T, V> v = *reinterpret_cast<const MoeVec<T, V>*>(y + r * h + c);
#pragma unroll
        for (int e = 0; e < V; ++e) acc[e] += wj * to_acc<A>(v.v[e]);
      }
      MoeVec<T, V> o;
#pragma unroll
      for (int e = 0; e < V; ++e) o.v[e] = from_acc<T>(acc[e]);
      *reinterpret_cast<MoeVec<T, V>*>(out + t * h + c) = o;
    }
  }
}

// Block-wide sum (blockDim.x a multiple of 32, at most 1024); every thread gets the result.
template <typename A>
CG_DEVICE A moe_block_sum(A v, A* scratch) {
#pragma unroll
  for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  const int warp = threadIdx.x / 32, warps = blockDim.x / 32;
  __syncthreads();  // scratch is free (the previous call's readers are done)
  if (threadIdx.x % 32 == 0) scratch[warp] = v;
  __syncthreads();
  A s = A(0);
  for (int i = 0; i < warps; ++i) s += scratch[i];  // same order in every thread
  return s;
}

// order[inv[q]] = q for every pair q whose row is in range (a broken permutation: one of the
// pairs naming a row wins, the others get no gradient).
__global__ void moe_invert_kernel(const int64_t* __restrict__ inv, int64_t* __restrict__ order, int64_t rows) {
  for (int64_t q = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; q < rows; q += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = inv[q];
    if (r >= 0 && r < rows) order[r] = q;
  }
}

// One block per row p of grad_y: the pair q = order[p] that reads it (if any) gives
// grad_y[p] = w[q] * grad[q / k] and grad_w[q] = <y[p], grad[q / k]>; no pair: zeros.
template <typename T, int V>
__global__ void moe_combine_backward_kernel(const T* __restrict__ grad, const T* __restrict__ y,
                                            const int64_t* __restrict__ order, const float* __restrict__ w,
                                            T* __restrict__ grad_y, float* __restrict__ grad_w, int64_t tokens,
                                            int64_t k, int64_t h) {
  using A = typename AccumulatorFor<T>::type;
  __shared__ A scratch[32];
  const int64_t rows = tokens * k;
  for (int64_t p = blockIdx.x; p < rows; p += gridDim.x) {
    const int64_t q = order[p];  // (uniform in the block)
    if (q < 0) {
      MoeVec<T, V> z;
#pragma unroll
      for (int e = 0; e < V; ++e) z.v[e] = from_acc<T>(A(0));
      for (int64_t c = int64_t(threadIdx.x) * V; c < h; c += int64_t(blockDim.x) * V) {
        *reinterpret_cast<MoeVec<T, V>*>(grad_y + p * h + c) = z;
      }
      continue;
    }
    const int64_t t = q / k;
    const A wq = w ? A(w[q]) : A(1);
    A dot = A(0);
    for (int64_t c = int64_t(threadIdx.x) * V; c < h; c += int64_t(blockDim.x) * V) {
      const MoeVec<T, V> g = *reinterpret_cast<const MoeVec<T, V>*>(grad + t * h + c);
      MoeVec<T, V> o;
#pragma unroll
      for (int e = 0; e < V; ++e) o.v[e] = from_acc<T>(wq * to_acc<A>(g.v[e]));
      *reinterpret_cast<MoeVec<T, V>*>(grad_y + p * h + c) = o;
      if (grad_w) {
        const MoeVec<T, V> v = *reinterpret_cast<const MoeVec<T, V>*>(y + p * h + c);
#pragma unroll
        for (int e = 0; e < V; ++e) dot += to_acc<A>(v.v[e]) * to_acc<A>(g.v[e]);
      }
    }
    if (grad_w) {
      const A s = moe_block_sum(dot, scratch);
      if (threadIdx.x == 0) grad_w[q] = float(s);
    }
  }
}

}  // namespace cutorch_gemm
