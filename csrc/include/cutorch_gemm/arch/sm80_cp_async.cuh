#pragma once
// cp.async (sm_80+): asynchronous global -> shared copies of 4, 8 or 16 bytes that bypass the
// register file, grouped with commit_group / wait_group into the stages of a ring. A source
// size below the copy size zero-fills the rest of the destination, which is how the mainloop
// predicates edge tiles: an out-of-bounds chunk copies 0 bytes and reads as zeros.

#include <cstdint>

#include "cutorch_gemm/core/macros.h"

namespace cutorch_gemm::sm80 {

CG_DEVICE uint32_t smem_addr(const void* p) { return uint32_t(__cvta_generic_to_shared(p)); }

// 16 bytes, L2 only (.cg: streamed operands are reused through shared memory, not L1).
// src_bytes in [0, 16]; the global address must be 16-byte aligned when src_bytes > 0.
CG_DEVICE void cp_async_16(uint32_t dst, const void* src, int src_bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes));
#endif
}

// cp_async_16 with an L2 cache policy (l2_policy below). NOTE (nvcc 13.0, sm_90a): where
// ptxas addresses the shared destination as a register plus a uniform register ([R + UR0]) it puts the
// policy's descriptor in an odd uniform register (desc[UR1]), and the instruction faults at run time
// (cudaErrorIllegalInstruction, H100; benchmarks/experiments/cp_async_hint_fault.cu reproduces it). The
// caller keeps the destination in plain registers (Mainloop::run: a shuffled base); there it compiles to
// [R + imm], desc[UR even] and runs (a regression would fault in the sliced-K GPU tests).
CG_DEVICE void cp_async_16_hint(uint32_t dst, const void* src, uint64_t policy) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "l"(policy));
#endif
}

// An L2 policy for cp_async_16_hint. evict_first: the lines a load allocates are the first their set
// evicts, so a stream that L2 holds dirty lines in front of (do_bench's flush) recycles its own lines
// instead of writing those back (the Hopper kernels' sm90::l2_policy_evict_first says more); otherwise the
// default priority as a policy (A/B runs: CUTORCH_GEMM_L2_HINT=off).
CG_DEVICE uint64_t l2_policy(bool evict_first) {
  uint64_t policy = 0;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if (evict_first) asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(policy));
  else asm volatile("createpolicy.fractional.L2::evict_normal.b64 %0, 1.0;\n" : "=l"(policy));
#endif
  return policy;
}

// 8 or 4 bytes (.ca: the only cache mode for copies below 16 bytes).
template <int kBytes>
CG_DEVICE void cp_async_small(uint32_t dst, const void* src, int src_bytes) {
  static_assert(kBytes == 4 || kBytes == 8, "cp.async.ca copies 4, 8 or 16 bytes");
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(dst), "l"(src), "n"(kBytes), "r"(src_bytes));
#endif
}

CG_DEVICE void cp_async_commit() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::);
#endif
}

// Waits until at most kPending committed groups are still in flight (this thread's copies).
template <int kPending>
CG_DEVICE void cp_async_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending));
#endif
}

}  // namespace cutorch_gemm::sm80
