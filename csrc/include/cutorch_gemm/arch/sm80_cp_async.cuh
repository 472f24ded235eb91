#pragma once
// cp.async atoms (sm_80+): asynchronous global -> shared copies of 4, 8 or 16 bytes that bypass
// registers, grouped by commit_group and awaited by wait_group. A false predicate copies no
// bytes and zero-fills the destination (src-size 0), which is how edge tiles are predicated.
//
// On older architectures the same calls fall back to a synchronous load + store, so the SIMT
// family still builds and runs there (slower).

#include "cutorch_gemm/core/macros.h"

namespace cutorch_gemm {

template <int kBytes>
CG_DEVICE void cp_async(void* smem, const void* gmem, bool pred) {
  static_assert(kBytes == 4 || kBytes == 8 || kBytes == 16, "cp.async copies 4, 8 or 16 bytes");
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  const int src_bytes = pred ? kBytes : 0;
  if constexpr (kBytes == 16) {
    // .cg: 16-byte copies skip L1 (operand tiles are reused from L2 and shared memory).
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(gmem), "r"(src_bytes));
  } else {
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(dst), "l"(gmem), "n"(kBytes),
                 "r"(src_bytes));
  }
#else
  struct alignas(kBytes) Chunk { unsigned char b[kBytes]; };
  Chunk v{};
  if (pred) v = *static_cast<const Chunk*>(gmem);
  *static_cast<Chunk*>(smem) = v;
#endif
}

CG_DEVICE void cp_async_commit() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::);
#endif
}

// Waits until at most kPending committed groups are still in flight.
template <int kPending>
CG_DEVICE void cp_async_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending));
#endif
}

}  // namespace cutorch_gemm
