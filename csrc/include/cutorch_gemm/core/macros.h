#pragma once
// Host/device qualifiers that also compile under a plain C++ compiler, so the host-device
// pieces (layouts, schedulers, fusion functors, heuristics) are unit-testable on a CPU.

#if defined(__CUDACC__)
#define CG_HOST_DEVICE __host__ __device__ __forceinline__
#define CG_DEVICE __device__ __forceinline__
#else
#define CG_HOST_DEVICE inline
#define CG_DEVICE inline
#endif

#include <cstdint>

namespace cutorch_gemm {

using index_t = int64_t;  // strides and element offsets: 64-bit, extents stay below 2^31

template <typename T>
CG_HOST_DEVICE constexpr T ceil_div(T a, T b) { return (a + b - 1) / b; }

template <typename T>
CG_HOST_DEVICE constexpr T min_of(T a, T b) { return a < b ? a : b; }

template <typename T>
CG_HOST_DEVICE constexpr T max_of(T a, T b) { return a < b ? b : a; }

}  // namespace cutorch_gemm
