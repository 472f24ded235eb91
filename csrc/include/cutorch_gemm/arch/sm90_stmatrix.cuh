#pragma once
// stmatrix (sm_90): a warp stores four 8 x 8 matrices of 16-bit elements to shared memory in one
// instruction. Register i of every lane holds matrix i's elements (row lane / 4, columns
// 2 (lane % 4) and +1): the layout of an mma / wgmma accumulator fragment after packing two
// fp32 values into one 32-bit pair. Lane l gives the address of row l % 8 of matrix l / 8 (16
// contiguous bytes), so any row permutation, a swizzle included, costs nothing extra.

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "cutorch_gemm/core/macros.h"

namespace cutorch_gemm::sm90 {

CG_DEVICE void stmatrix_x4(uint32_t smem_row_addr, uint32_t r0, uint32_t r1, uint32_t r2, uint32_t r3) {
  asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(smem_row_addr), "r"(r0),
               "r"(r1), "r"(r2), "r"(r3)
               : "memory");
}

// Two fp32 values rounded to a 16-bit pair (x0 in the low half: the lower column).
template <typename T>
CG_DEVICE uint32_t pack_pair(float x0, float x1) {
  static_assert(std::is_same_v<T, __nv_bfloat16> || std::is_same_v<T, __half>, "16-bit element types");
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    const __nv_bfloat162 v = __floats2bfloat162_rn(x0, x1);
    return *reinterpret_cast<const uint32_t*>(&v);
  } else {
    const __half2 v = __floats2half2_rn(x0, x1);
    return *reinterpret_cast<const uint32_t*>(&v);
  }
}

// The fp32 value of a 16-bit element given as its bits (bf16: the high half of an fp32; fp16:
// converted).
template <typename T>
CG_DEVICE float half_bits_to_float(uint16_t bits) {
  static_assert(std::is_same_v<T, __nv_bfloat16> || std::is_same_v<T, __half>, "16-bit element types");
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    return __uint_as_float(uint32_t(bits) << 16);
  } else {
    return __half2float(__ushort_as_half(bits));
  }
}

}  // namespace cutorch_gemm::sm90
