#pragma once
// Hopper skinny GEMM (small M: decode and small batches; sm_90a, TMA + wgmma):
//   D = act(alpha * x W^T + beta * C + bias),  x = a (M x K, K contiguous),  W^T = b (K x N,
//   K contiguous: nn.Linear's weight read through its transpose).
// With M <= 128 the time is W's N x K bytes streamed from DRAM; the arithmetic is small. The
// kernel computes D^T = W x^T so that W's rows fill wgmma's 64-row side and the tokens its N
// side (16 to 128 columns), and feeds both from a deep TMA ring: one producer thread keeps
// tens of kilobytes of W in flight per CTA with a handful of instructions, where the mma.sync
// skinny kernel (kernel/sm80_skinny_kernel.cuh) spends a load instruction per 16 bytes.
//
// Work split: CTA (blockIdx.y) = 64 or 128 rows of W (columns of D: one consumer warpgroup per
// 64, sharing the CTA's x boxes); the `splits` CTAs of one
// cluster (blockIdx.x = cluster rank) take consecutive ranges of K's 64-wide blocks, so that
// even N / 64 < SMs fills the GPU. Each CTA leaves its fp32 partial tile in its own shared
// memory; after a cluster barrier, CTA r sums the r-th share of the tile's elements over the
// cluster's partials in rank order through distributed shared memory (deterministic, one
// launch, no workspace) and applies the epilogue.
//
// Threads: the consumer warpgroups first (wgmma), then the producer warp (TMA).

#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "cutorch_gemm/arch/sm90_cluster.cuh"
#include "cutorch_gemm/arch/sm90_mbarrier.cuh"
#include "cutorch_gemm/arch/sm90_tma.cuh"
#include "cutorch_gemm/arch/sm90_wgmma.cuh"
#include "cutorch_gemm/core/numeric.cuh"
#include "cutorch_gemm/device/gemm_args.h"
#include "cutorch_gemm/device/sm90_skinny.h"
#include "cutorch_gemm/epilogue/fusion.h"
#include "cutorch_gemm/pipeline/sm90_pipeline.cuh"

namespace cutorch_gemm {

// Shared memory of one CTA: the ring (W and x stages, 128-byte swizzled by TMA) and its
// barriers. After the mainloop the ring's bytes hold the fp32 partial tile, [token][W row],
// rows padded to sm90_skinny_red_ld floats (conflict-free fragment stores).
template <typename T, int kTok>
struct Sm90SkinnySmem {
  static constexpr int kStages = sm90_skinny_stages(kTok);
  alignas(1024) T w[kStages][sm90_skinny_rows(kTok) * kSm90SkinnyBlockK];
  alignas(1024) T x[kStages][kTok * kSm90SkinnyBlockK];
  alignas(8) uint64_t full[kStages];
  alignas(8) uint64_t empty[kStages];
};

// One k16 step of D^T (64 x kTok) += W (64 x 16) x^T (16 x kTok): the fragment's size picks
// the instruction width.
template <typename T, int kRegs>
CG_DEVICE void skinny_wgmma(float (&acc)[kRegs], uint64_t desc_w, uint64_t desc_x, int scale_d) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    sm90::wgmma_narrow_k16_bf16<0, 0>(acc, desc_w, desc_x, scale_d);
  } else {
    sm90::wgmma_narrow_k16_f16<0, 0>(acc, desc_w, desc_x, scale_d);
  }
}

template <typename T, typename Out, int kTok>
__global__ void __launch_bounds__(sm90_skinny_threads(kTok), 1)
    sm90_skinny_kernel(const __grid_constant__ CUtensorMap tma_w, const __grid_constant__ CUtensorMap tma_x,
                       const GemmArgs g, const int w_hint) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using Smem = Sm90SkinnySmem<T, kTok>;
  constexpr int kStages = Smem::kStages;
  constexpr int kRegs = kTok / 2;  // the 64 x kTok fp32 fragment per consumer thread
  constexpr int kRows = sm90_skinny_rows(kTok);
  constexpr int kConsumerThreads = 128 * sm90_skinny_consumers(kTok);
  constexpr int kThreads = sm90_skinny_threads(kTok);
  constexpr uint32_t kStageBytes = (kRows + kTok) * kSm90SkinnyBlockK * sizeof(T);
  constexpr int kLd = sm90_skinny_red_ld(kTok);
  static_assert(kTok * kLd * sizeof(float) <= sizeof(Smem::w) + sizeof(Smem::x), "the partial tile fits the ring");
  extern __shared__ uint8_t smem_raw[];
  // NOTE: the 128-byte swizzle pattern repeats every 1024 bytes; stages must start on it.
  Smem& s = *reinterpret_cast<Smem*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
  float* red = reinterpret_cast<float*>(&s.w[0][0]);

  const int splits = int(gridDim.x);
  const int rank = int(blockIdx.x);  // the cluster spans gridDim.x: rank == cluster_ctarank
  const int row0 = int(blockIdx.y) * kRows;
  const int k_blocks = ceil_div(g.shape.k, kSm90SkinnyBlockK);
  const int kb_begin = int((long long)k_blocks * rank / splits);
  const int kb_end = int((long long)k_blocks * (rank + 1) / splits);

  if (threadIdx.x == 0) {
    for (int i = 0; i < kStages; ++i) {
      sm90::mbarrier_init(&s.full[i], 1);
      sm90::mbarrier_init(&s.empty[i], kConsumerThreads / 32);  // one arrive per consumer warp
    }
    sm90::mbarrier_init_fence();
    sm90::tma_prefetch_descriptor(&tma_w);
    sm90::tma_prefetch_descriptor(&tma_x);
  }
  __syncthreads();

  using State = sm90::PipelineState<kStages>;
  if (threadIdx.x >= kConsumerThreads) {
    // Producer: one thread issues every load of the CTA's K range.
    if (threadIdx.x == kConsumerThreads) {
      State st;
      // W is read once (its rows and K range belong to this CTA): the L2 evict-first policy
      // (w_hint; CUTORCH_GEMM_L2_HINT=off clears it for A/B runs).
      const uint64_t policy = sm90::l2_policy_evict_first();
      for (int kb = kb_begin; kb < kb_end; ++kb) {
        const int k0 = kb * kSm90SkinnyBlockK;
        sm90::mbarrier_wait(&s.empty[st.index], st.phase ^ 1);
        sm90::mbarrier_arrive_expect_tx(&s.full[st.index], kStageBytes);
        if (w_hint) sm90::tma_load_2d_hint(s.w[st.index], &tma_w, &s.full[st.index], k0, row0, policy);
        else sm90::tma_load_2d(s.w[st.index], &tma_w, &s.full[st.index], k0, row0);
        sm90::tma_load_2d(s.x[st.index], &tma_x, &s.full[st.index], k0, 0);
        st.advance();
      }
    }
  } else {
    // Consumer warpgroups (64 W rows each): 4 k16 steps per stage; a stage goes back to the producer once the
    // next stage's wgmma are issued (wait_group 1: the previous group has read its operands).
    // The first k16 step overwrites the fragment (scale_d = 0); an empty K range (more splits
    // than K blocks) is zeroed after the loop.
    // NOTE: zeroing before the loop on that path made ptxas serialize every wgmma (C7515).
    float acc[kRegs];
    State st, prev;
    bool have_prev = false;
    for (int kb = kb_begin; kb < kb_end; ++kb) {
      sm90::mbarrier_wait(&s.full[st.index], st.phase);
      const uint64_t dw = sm90::make_desc_k_major_sw128(s.w[st.index] + (threadIdx.x / 128) * 64 * kSm90SkinnyBlockK);
      const uint64_t dx = sm90::make_desc_k_major_sw128(s.x[st.index]);
      sm90::wgmma_fence();
#pragma unroll
      for (int kk = 0; kk < kSm90SkinnyBlockK / 16; ++kk) {
        skinny_wgmma<T>(acc, dw + kk * sm90::kDescStepK16KMajor, dx + kk * sm90::kDescStepK16KMajor,
                        kb > kb_begin || kk > 0 ? 1 : 0);
      }
      sm90::wgmma_commit();
      sm90::wgmma_wait<1>();  // (no accumulator fence here: the group just issued still owns them)
      if (have_prev) {
        __syncwarp();
        if (threadIdx.x % 32 == 0) sm90::mbarrier_arrive(&s.empty[prev.index]);
      }
      prev = st;
      have_prev = true;
      st.advance();
    }
    sm90::wgmma_wait<0>();
    if (kb_begin == kb_end) {
#pragma unroll
      for (int i = 0; i < kRegs; ++i) acc[i] = 0.0f;
    }
    sm90::fence_accumulators(acc);
    // Every consumer warp's wgmma are done before any warp overwrites the ring with the
    // partial tile (named barrier 1: the consumer warps).
    asm volatile("bar.sync 1, %0;\n" ::"n"(kConsumerThreads) : "memory");
    // Fragment -> [token][row]: register i of thread (warp w of the CTA, lane l) is W row
    // 16 w + l / 4 + 8 ((i / 2) % 2) (warpgroup c's warps 4c..4c+3 cover rows 64c..64c+63),
    // token 8 (i / 4) + 2 (l % 4) + i % 2.
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
#pragma unroll
    for (int i = 0; i < kRegs; ++i) {
      const int r = 16 * warp + lane / 4 + 8 * ((i / 2) % 2);
      const int t = 8 * (i / 4) + 2 * (lane % 4) + i % 2;
      red[t * kLd + r] = acc[i];
    }
  }
  // Every CTA's partial tile is written (release / acquire across the cluster).
  if (splits > 1) sm90::cluster_sync();
  else __syncthreads();

  // Epilogue: quads of 4 D columns; CTA `rank` takes the rank-th share of the M x kRows / 4 quads.
  // Consecutive threads take consecutive quads of one D row (coalesced stores).
  constexpr int kQuads = kRows / 4;  // per token
  const int m = g.shape.m, n = g.shape.n;
  const int quads = min(m, kTok) * kQuads;
  const int per = ceil_div(quads, splits);
  const int q_end = min(quads, (rank + 1) * per);
  const float alpha = float(g.alpha), beta = float(g.beta);
  const T* bias = static_cast<const T*>(g.bias);
  const T* c_ptr = static_cast<const T*>(g.c);
  Out* d = static_cast<Out*>(g.d);
  for (int e = rank * per + int(threadIdx.x); e < q_end; e += kThreads) {
    const int t = e / kQuads, c4 = 4 * (e % kQuads);
    const float* src = red + t * kLd + c4;
    float4 sum = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (splits > 1) {
      for (int q = 0; q < splits; ++q) {  // rank order: the same sum whichever CTA adds it
        const float4 v = sm90::ld_shared_cluster_f32x4(src, uint32_t(q));
        sum.x += v.x;
        sum.y += v.y;
        sum.z += v.z;
        sum.w += v.w;
      }
    } else {
      sum = *reinterpret_cast<const float4*>(src);
    }
    const float part[4] = {sum.x, sum.y, sum.z, sum.w};
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int col = row0 + c4 + j;
      if (col >= n) break;
      float v = alpha * part[j];
      if (c_ptr != nullptr) v += beta * to_acc<float>(c_ptr[index_t(t) * g.shape.c_sm + index_t(col) * g.shape.c_sn]);
      if (bias != nullptr) v += to_acc<float>(bias[col]);
      v = apply_activation(g.act, v);
      d[index_t(t) * g.shape.d_sm + index_t(col) * g.shape.d_sn] = from_acc<Out>(v);
    }
  }
  // The peers read this CTA's partial tile: it stays until every CTA of the cluster is done.
  if (splits > 1) sm90::cluster_sync();
#endif
}

}  // namespace cutorch_gemm
