#pragma once
// ldmatrix (sm_75+): a warp loads one, two or four 8x8 matrices of 16-bit elements from shared
// memory; lane l supplies the address of row (l % 8) of matrix (l / 8) and receives, per matrix,
// the 32-bit pair (row l / 4, columns 2 (l % 4) .. +1). With .trans it receives the pair
// (rows 2 (l % 4) .. +1, column l / 4) instead: an MN-major tile yields K-major fragments.
// Bytes are bytes: on 32-bit (tf32) or 8-bit (int8) data the non-transposed form hands lane l
// the 4 bytes at row l / 4, bytes 4 (l % 4) .. +3, which is the mma fragment layout there too.

#include <cstdint>

#include "cutorch_gemm/core/macros.h"

namespace cutorch_gemm::sm80 {

CG_DEVICE void ldmatrix_x4(uint32_t (&r)[4], uint32_t addr) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
#endif
}

CG_DEVICE void ldmatrix_x4_trans(uint32_t (&r)[4], uint32_t addr) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
#endif
}

CG_DEVICE void ldmatrix_x2(uint32_t (&r)[2], uint32_t addr) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];\n" : "=r"(r[0]), "=r"(r[1]) : "r"(addr));
#endif
}

CG_DEVICE void ldmatrix_x2_trans(uint32_t (&r)[2], uint32_t addr) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];\n" : "=r"(r[0]), "=r"(r[1]) : "r"(addr));
#endif
}

CG_DEVICE void ldmatrix_x1(uint32_t& r, uint32_t addr) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];\n" : "=r"(r) : "r"(addr));
#endif
}

CG_DEVICE void ldmatrix_x1_trans(uint32_t& r, uint32_t addr) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%0}, [%1];\n" : "=r"(r) : "r"(addr));
#endif
}

}  // namespace cutorch_gemm::sm80
