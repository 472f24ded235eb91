#pragma once
// Thread-block cluster atoms (sm_90): rank, cluster-wide barrier, an mbarrier arrive on a peer
// CTA's barrier, and TMA loads multicast to several CTAs of the cluster.

#include <cuda.h>

#include <cstdint>

#include "cutorch_gemm/arch/sm90_mbarrier.cuh"

namespace cutorch_gemm::sm90 {

CG_DEVICE uint32_t cluster_ctarank() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return r;
}

// Every thread of every CTA of the cluster (a launch without clusters is a cluster of one).
// arrive has release and wait acquire semantics: shared-memory writes before it (barrier
// initialisation) are visible to the peers after it.
CG_DEVICE void cluster_sync() {
  asm volatile("barrier.cluster.arrive;\nbarrier.cluster.wait;\n" ::: "memory");
}

// cluster_sync without the release / acquire: orders nothing but the threads' arrival. After
// fence.mbarrier_init.release.cluster it still publishes barrier initialisation to the peers (the
// PTX ISA's pairing of that fence with a relaxed arrive).
CG_DEVICE void cluster_sync_relaxed() {
  asm volatile("barrier.cluster.arrive.relaxed;\nbarrier.cluster.wait;\n" ::: "memory");
}

// Arrives on the barrier at the same shared-memory offset as `bar` in CTA `cta` of the cluster.
// NOTE: default semantics (release at CTA scope), not .release.cluster: the arrive only says
// "this CTA's wgmma reads of the stage are complete" (a write-after-read order that the wgmma
// wait already gives); a cluster-scope release stalled the consumer warp on every k-slice
// (a 2x1 cluster ran at 57% of the speed of single CTAs on the H100).
CG_DEVICE void mbarrier_arrive_cluster(uint64_t* bar, uint32_t cta) {
  asm volatile(
      "{\n .reg .b32 remote;\n mapa.shared::cluster.u32 remote, %0, %1;\n"
      " mbarrier.arrive.shared::cluster.b64 _, [remote];\n}\n"
      ::"r"(smem_addr(bar)), "r"(cta)
      : "memory");
}

// Four floats at `p`'s shared-memory offset (16-byte aligned) in CTA `cta` of the cluster
// (distributed shared memory; the peer must not exit before the read completes).
CG_DEVICE float4 ld_shared_cluster_f32x4(const void* p, uint32_t cta) {
  float4 v;
  asm volatile(
      "{\n .reg .b32 remote;\n mapa.shared::cluster.u32 remote, %4, %5;\n"
      " ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [remote];\n}\n"
      : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
      : "r"(smem_addr(p)), "r"(cta)
      : "memory");
  return v;
}
// TMA loads whose box lands at the same shared-memory offset in every CTA of `mask` (bit i: rank
// i), each completing its bytes on the barrier at `bar`'s offset in that CTA.
CG_DEVICE void tma_load_2d_multicast(void* smem_dst, const CUtensorMap* map, uint64_t* bar, int c0, int c1,
                                     uint16_t mask) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
      " [%0], [%1, {%2, %3}], [%4], %5;\n"
      ::"r"(smem_addr(smem_dst)), "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(smem_addr(bar)),
      "h"(mask)
      : "memory");
}
CG_DEVICE void tma_load_3d_multicast(void* smem_dst, const CUtensorMap* map, uint64_t* bar, int c0, int c1, int c2,
                                     uint16_t mask) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
      " [%0], [%1, {%2, %3, %4}], [%5], %6;\n"
      ::"r"(smem_addr(smem_dst)), "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(c2),
      "r"(smem_addr(bar)), "h"(mask)
      : "memory");
}

}  // namespace cutorch_gemm::sm90
