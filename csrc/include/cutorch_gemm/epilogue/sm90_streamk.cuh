#pragma once
// Stream-K fix-up of the Hopper kernel (scheduler/sm90_tile_scheduler.cuh, get_item): a CTA
// that computed a tile's first k-blocks parks its fp32 accumulators in its slot of
// args.sk_partials and raises its flag; the CTA that computed the tile's last k-blocks waits for
// the flags of the CTAs before it, adds their partials in CTA (= k) order and runs the epilogue.
// A consumer warpgroup's fragment is stored as it sits in registers: float4 r4 of thread t at
// [r4][t], so the stores and loads of a warp are 512 contiguous bytes. One flag per CTA and
// consumer warpgroup (the two halves of a tile are independent). In 2x1 clusters (sm90_streamk_pairs) each CTA
// of a cluster keeps its own slot and flags for its tile of the pair.

#include "cutorch_gemm/core/macros.h"
#include "cutorch_gemm/device/gemm_args.h"
#include "cutorch_gemm/epilogue/sm90_epilogue.cuh"  // named_barrier_sync

namespace cutorch_gemm {

CG_DEVICE void streamk_flag_release(int* flag) {
#if defined(__CUDA_ARCH__)
  asm volatile("st.release.gpu.global.b32 [%0], %1;" ::"l"(flag), "r"(1) : "memory");
#endif
}

CG_DEVICE int streamk_flag_acquire(const int* flag) {
  int v = 0;
#if defined(__CUDA_ARCH__)
  asm volatile("ld.acquire.gpu.global.b32 %0, [%1];" : "=r"(v) : "l"(flag) : "memory");
#endif
  return v;
}

// The slot of (cta, consumer): 128 threads x kRegs floats.
template <int kRegs>
CG_DEVICE float4* streamk_slot(const GemmArgs& g, int cta, int consumer) {
  return reinterpret_cast<float4*>(g.sk_partials + (size_t(cta) * 2 + consumer) * (size_t(kRegs) * 128));
}

template <int kRegs>
CG_DEVICE void sm90_streamk_store(const GemmArgs& g, const float (&acc)[kRegs], int cta, int consumer, int tid_in_wg,
                                  int barrier_id) {
  float4* slot = streamk_slot<kRegs>(g, cta, consumer);
#pragma unroll
  for (int r4 = 0; r4 < kRegs / 4; ++r4) {
    slot[r4 * 128 + tid_in_wg] = make_float4(acc[4 * r4], acc[4 * r4 + 1], acc[4 * r4 + 2], acc[4 * r4 + 3]);
  }
  __threadfence();  // this thread's partial, visible at GPU scope before the flag
  named_barrier_sync(barrier_id, 128);
  if (tid_in_wg == 0) streamk_flag_release(g.sk_flags + 2 * cta + consumer);
}

// first, cta: slots (CTAs); step: CTAs per unit (2x1 clusters: 2, the slots of the same cluster rank).
template <int kRegs>
CG_DEVICE void sm90_streamk_add(const GemmArgs& g, float (&acc)[kRegs], int first, int cta, int consumer, int tid_in_wg,
                                int barrier_id, int step = 1) {
  for (int c = first; c < cta; c += step) {
    if (tid_in_wg == 0) {
      while (streamk_flag_acquire(g.sk_flags + 2 * c + consumer) == 0) __nanosleep(64);
    }
    named_barrier_sync(barrier_id, 128);
    const float4* slot = streamk_slot<kRegs>(g, c, consumer);
#pragma unroll
    for (int r4 = 0; r4 < kRegs / 4; ++r4) {
      const float4 v = __ldcg(slot + r4 * 128 + tid_in_wg);  // L2: written by another SM
      acc[4 * r4] += v.x;
      acc[4 * r4 + 1] += v.y;
      acc[4 * r4 + 2] += v.z;
      acc[4 * r4 + 3] += v.w;
    }
  }
}

}  // namespace cutorch_gemm
