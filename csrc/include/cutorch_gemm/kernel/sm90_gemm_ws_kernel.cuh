#pragma once
// Hopper GEMM kernel: persistent, warp-specialized, cooperative (seeds: the Hopper talk).
//   warpgroup 0  producer: one elected thread issues TMA loads of A and B k-slices into a ring
//                of shared-memory stages (full/empty mbarriers), tile after tile
//   warpgroups 1..kConsumers  consumers: wgmma from shared memory into registers, 64 rows of
//                the 128-row tile each; one wgmma group in flight, the stage behind it released;
//                then the fused epilogue straight from registers while the producer already
//                loads the next tile.
// Operands: K-major A (M x K) and B given as N x K (the nn.Linear weight), fp16 / bf16.

#include <cuda.h>

#include "cutorch_gemm/arch/sm90_tma.cuh"
#include "cutorch_gemm/arch/sm90_warpgroup.cuh"
#include "cutorch_gemm/arch/sm90_wgmma.cuh"
#include "cutorch_gemm/device/gemm_args.h"
#include "cutorch_gemm/epilogue/simt_epilogue.cuh"
#include "cutorch_gemm/pipeline/sm90_pipeline.cuh"
#include "cutorch_gemm/scheduler/raster.h"

namespace cutorch_gemm {

struct Sm90Params {
  GemmArgs args;     // extents, epilogue operands and scalars (A and B come through TMA)
  int tiles_m;
  int tiles_n;
  int raster_group;
};

constexpr int Sm90EpilogueCols = 32;

struct Acc4 {
  float v[4];
};

template <class Cfg, typename T>
struct Sm90SharedStorage {
  alignas(1024) T a[Cfg::kStages][Cfg::kBlockM * Cfg::kBlockK];  // 128B-swizzled by TMA
  alignas(1024) T b[Cfg::kStages][Cfg::kBlockN * Cfg::kBlockK];
  // Per consumer warpgroup: a 64 x 32 fp32 slice of its accumulators on the way out (padded
  // rows: the fragment writes and the row-wise reads both stay free of bank conflicts).
  alignas(16) float epi[Cfg::kConsumers][64][Sm90EpilogueCols + 4];
  alignas(8) uint64_t full[Cfg::kStages];
  alignas(8) uint64_t empty[Cfg::kStages];
  alignas(8) uint64_t order[2];  // ping-pong: "consumer c finished a mainloop"
};

template <typename T>
CG_DEVICE void sm90_wgmma(float (&d)[128], uint64_t da, uint64_t db, int scale_d);
template <>
CG_DEVICE void sm90_wgmma<__nv_bfloat16>(float (&d)[128], uint64_t da, uint64_t db, int scale_d) {
  sm90::wgmma_m64n256k16_bf16(d, da, db, scale_d);
}
template <>
CG_DEVICE void sm90_wgmma<__half>(float (&d)[128], uint64_t da, uint64_t db, int scale_d) {
  sm90::wgmma_m64n256k16_f16(d, da, db, scale_d);
}

CG_DEVICE void named_barrier_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

// Fused epilogue of one consumer warpgroup, staged through shared memory 32 columns at a time.
// wgmma's accumulator layout gives thread (warp w, lane l) rows 16w + l/4 (+8) and column pairs
// 8j + 2(l%4) of its 64 x 256 slice; each slice goes to smem in that layout, then the
// warpgroup reads it back row-wise and applies the fusion functor in a compact (not unrolled)
// loop with 4-element vector stores.
// NOTE: applying the functor straight from registers unrolls it 128 times per thread (~40K
// SASS instructions); the instruction fetch of that code dominated the whole kernel.
template <typename T>
CG_DEVICE void sm90_store_tile(const GemmArgs& g, const float (&acc)[128], float (*epi)[Sm90EpilogueCols + 4],
                               int row_base, int col_base, int tid_in_wg, int barrier_id) {
  using Epi = SimtEpilogue<T>;
  const Problem prob = resolve_problem(g.shape, 0);
  const int warp = tid_in_wg / 32;
  const int lane = tid_in_wg % 32;
  constexpr int kChunkJ = Sm90EpilogueCols / 8;  // n8 blocks per chunk
#pragma unroll
  for (int chunk = 0; chunk < 256 / Sm90EpilogueCols; ++chunk) {
    named_barrier_sync(barrier_id, 128);  // the previous chunk has been read
#pragma unroll
    for (int jj = 0; jj < kChunkJ; ++jj) {
      const int j = chunk * kChunkJ + jj;
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int r = warp * 16 + lane / 4 + 8 * h;
        const int cc = 8 * jj + 2 * (lane % 4);
        *reinterpret_cast<float2*>(&epi[r][cc]) = make_float2(acc[4 * j + 2 * h], acc[4 * j + 2 * h + 1]);
      }
    }
    named_barrier_sync(barrier_id, 128);
    const int n_chunk = col_base + chunk * Sm90EpilogueCols;
#pragma unroll 1
    for (int idx = tid_in_wg; idx < 64 * (Sm90EpilogueCols / 4); idx += 128) {
      const int r = idx / (Sm90EpilogueCols / 4);
      const int c4 = (idx % (Sm90EpilogueCols / 4)) * 4;
      const int m = row_base + r;
      const int n = n_chunk + c4;
      if (m >= prob.m || n >= prob.n) continue;
      const float4 x = *reinterpret_cast<const float4*>(&epi[r][c4]);
      const Acc4 raw{{x.x, x.y, x.z, x.w}};
      Epi::store4(g, prob, m, n, raw.v);
    }
  }
}

template <class Cfg, typename T>
__global__ void __launch_bounds__(Cfg::kThreads, 1)
sm90_gemm_ws_kernel(const __grid_constant__ CUtensorMap tma_a, const __grid_constant__ CUtensorMap tma_b,
                    const Sm90Params p) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using Storage = Sm90SharedStorage<Cfg, T>;
  using State = sm90::PipelineState<Cfg::kStages>;
  extern __shared__ uint8_t smem_raw[];
  // NOTE: the 128-byte swizzle pattern repeats every 1024 bytes; stages must start on it.
  Storage& s = *reinterpret_cast<Storage*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
  const sm90::TmaPipeline<Cfg::kStages> pipe{s.full, s.empty};

  const int warpgroup = threadIdx.x / 128;
  const int tid_in_wg = threadIdx.x % 128;
  if (threadIdx.x == 0) {
    for (int i = 0; i < Cfg::kStages; ++i) {
      sm90::mbarrier_init(&s.full[i], 1);
      // Cooperative: both consumer warpgroups read every stage; ping-pong: one does.
      sm90::mbarrier_init(&s.empty[i], Cfg::kPingpong ? 128 : 128 * Cfg::kConsumers);
    }
    sm90::mbarrier_init(&s.order[0], 1);
    sm90::mbarrier_init(&s.order[1], 1);
    sm90::mbarrier_init_fence();
    sm90::tma_prefetch_descriptor(&tma_a);
    sm90::tma_prefetch_descriptor(&tma_b);
  }
  __syncthreads();

  const GemmArgs& g = p.args;
  const int tiles = p.tiles_m * p.tiles_n;
  const int k_blocks = ceil_div(g.shape.k, Cfg::kBlockK);
  constexpr uint32_t kStageBytes = (Cfg::kBlockM + Cfg::kBlockN) * Cfg::kBlockK * sizeof(T);

  if (warpgroup == 0) {
    sm90::setmaxnreg_dec<Cfg::kProducerRegs>();
    if (tid_in_wg == 0) {
      State st;
      for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
        const TileCoord tc = raster_tile(tile, p.tiles_m, p.tiles_n, p.raster_group);
        for (int kb = 0; kb < k_blocks; ++kb) {
          pipe.producer_acquire(st);
          pipe.producer_commit(st, kStageBytes);
          sm90::tma_load_2d(s.a[st.index], &tma_a, &s.full[st.index], kb * Cfg::kBlockK, tc.m * Cfg::kBlockM);
          sm90::tma_load_2d(s.b[st.index], &tma_b, &s.full[st.index], kb * Cfg::kBlockK, tc.n * Cfg::kBlockN);
          st.advance();
        }
      }
    }
  } else {
    sm90::setmaxnreg_inc<Cfg::kConsumerRegs>();
    const int consumer = warpgroup - 1;
    State st;
    float acc[128];
    // Cooperative: every tile, rows [64c, 64c + 64) of it. Ping-pong: every other tile, all rows;
    // the ring carries the other warpgroup's tiles in between, which this one skips.
    const int first = Cfg::kPingpong ? blockIdx.x + consumer * gridDim.x : blockIdx.x;
    const int step = Cfg::kPingpong ? Cfg::kConsumers * gridDim.x : gridDim.x;
    const int row_in_tile = Cfg::kPingpong ? 0 : consumer * 64;
    if (Cfg::kPingpong) st.advance(consumer * k_blocks);
    int own = 0;  // tiles this warpgroup has done
    for (int tile = first; tile < tiles; tile += step, ++own) {
      const TileCoord tc = raster_tile(tile, p.tiles_m, p.tiles_n, p.raster_group);
      // NOTE: ping-pong mainloops take turns: a warpgroup starts only after the other has
      // passed every full-barrier wait of the tile before it in the ring. Besides staggering
      // the epilogues against the other's wgmma, this keeps every parity wait within one
      // phase of the barrier: with K >= kStages slices, the second warpgroup's first wait
      // would otherwise see the barrier's initial "previous phase complete" and read early.
      if (Cfg::kPingpong && (consumer == 1 || own > 0)) {
        sm90::mbarrier_wait(&s.order[1 - consumer], consumer == 0 ? uint32_t(own - 1) & 1u : uint32_t(own) & 1u);
      }
      State prev;
      for (int kb = 0; kb < k_blocks; ++kb) {
        pipe.consumer_wait(st);
        const T* a_tile = s.a[st.index] + row_in_tile * Cfg::kBlockK;
        const uint64_t da = sm90::make_desc_k_major_sw128(a_tile);
        const uint64_t db = sm90::make_desc_k_major_sw128(s.b[st.index]);
        sm90::fence_accumulators(acc);
        sm90::wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < Cfg::kBlockK / 16; ++kk) {
          // Each 16-element K step is 32 bytes further into the swizzled rows (>> 4: 2).
          sm90_wgmma<T>(acc, da + 2 * kk, db + 2 * kk, (kb > 0 || kk > 0) ? 1 : 0);
        }
        sm90::wgmma_commit();
        sm90::fence_accumulators(acc);
        sm90::wgmma_wait<1>();  // the previous k-slice's wgmma is done: release its stage
        if (kb > 0) pipe.consumer_release(prev);
        prev = st;
        st.advance();
      }
      if (Cfg::kPingpong && tid_in_wg == 0) sm90::mbarrier_arrive(&s.order[consumer]);
      sm90::wgmma_wait<0>();
      sm90::fence_accumulators(acc);
      if (k_blocks > 0) pipe.consumer_release(prev);
      sm90_store_tile<T>(g, acc, s.epi[consumer], tc.m * Cfg::kBlockM + row_in_tile, tc.n * Cfg::kBlockN,
                         tid_in_wg, 1 + consumer);
      if (Cfg::kPingpong) st.advance((Cfg::kConsumers - 1) * k_blocks);
    }
  }
#endif
}

}  // namespace cutorch_gemm
