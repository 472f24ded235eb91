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
// Threads: the consumer warpgroups first (wgmma), then the producer warp (TMA). With a K split
// every thread takes a share of the epilogue; without one the consumers run it alone (the producer
// warp leaves after its loads, or, grouped, runs ahead to the next item's).
//
// Grouped (kGrouped; grouped_mm 2D x 3D at decode sizes, device/sm90_skinny.h's grouped rule):
// W is the group's (N x K) slice of a stacked weight (a 3-D tensor map, group on the outer axis;
// kWMn: its N is the contiguous dimension, a (G, K, N) tensor, and wgmma reads the box transposed)
// and x the group's rows, [clamp(offs[g-1]), clamp(offs[g])), at most M <= kTok of them. The work
// items are (n-th non-empty group, 64-row W tile) pairs; a warp finds the n-th non-empty group by
// a ballot over the device offsets (nothing waits for the host; empty groups cost nothing). With
// non-decreasing offsets at most min(G, M) groups have rows (the launch's `slots`). Grid
// (splits, row tiles, slots): CTA (y, z) takes item z * tiles + y, then every gridDim.y * gridDim.z-th
// item after it. Without a K split the grid is persistent instead, (1, P, 1) with the P CTAs that
// are resident at once, and the producer fills the ring for a CTA's next item while its consumers
// run the last one's epilogue (one CTA per item paid the ring's first loads each time: Qwen3 down,
// 4 tokens, 46.4 -> 38.3 us on an H200). The launch also stores the rows past offs[-1] (no
// separate zeroing kernel). kSwiGlu: grouped_mm's fused SwiGLU, D = silu(gate) * up of b's
// [gate | up] halves; an item is 32 columns of D, its 64 W rows the matching gate and up rows.

#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "cutorch_gemm/arch/sm90_cluster.cuh"
#include "cutorch_gemm/arch/sm90_grid_dependency.cuh"
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
// rows padded to sm90_skinny_red_ld floats (conflict-free fragment stores). kOwnRed (the grouped
// kernel and the deep ring): the partial tile has its own bytes. The grouped kernel needs them, so that the producer can fill the ring for
// the CTA's next work item while the consumers run this one's epilogue; the deep ring (kDeep,
// sm90_skinny_stages) has room for them at one CTA per SM, and then no generic store lands on bytes
// TMA wrote (compute-sanitizer's racecheck reported hazards there, sometimes, when the deep ring
// wrapped: benchmarks/RESULTS.md, sixty-fourth session).
template <typename T, int kTok, bool kGrouped = false, bool kDeep = false>
struct Sm90SkinnySmem {
  static constexpr bool kOwnRed = kGrouped || kDeep;
  static constexpr int kStages = sm90_skinny_stages(kTok, kDeep);
  alignas(1024) T w[kStages][sm90_skinny_rows(kTok) * kSm90SkinnyBlockK];
  alignas(1024) T x[kStages][kTok * kSm90SkinnyBlockK];
  alignas(16) float red[kOwnRed ? kTok * sm90_skinny_red_ld(kTok) : 4];
  alignas(8) uint64_t full[kStages];
  alignas(8) uint64_t empty[kStages];
  uint64_t tail_zero;  // (grouped) bit t: row offs[-1] + t lies in no group, store zeros
};

// One k16 step of D^T (64 x kTok) += W (64 x 16) x^T (16 x kTok): the fragment's size picks
// the instruction width.
// kWMn: W's tile is MN-major (wgmma's transpose bit for A).
template <typename T, int kWMn, int kRegs>
CG_DEVICE void skinny_wgmma(float (&acc)[kRegs], uint64_t desc_w, uint64_t desc_x, int scale_d) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    sm90::wgmma_narrow_k16_bf16<kWMn, 0>(acc, desc_w, desc_x, scale_d);
  } else {
    sm90::wgmma_narrow_k16_f16<kWMn, 0>(acc, desc_w, desc_x, scale_d);
  }
}

// The n-th (0-based) group with rows, its index and rows; -1 when there are fewer. Called by whole
// warps (a ballot over 32 groups at a time); every lane gets the same answer.
CG_DEVICE int skinny_nth_group(const int32_t* offs, int groups, int extent, int n, GroupRange* out) {
  const int lane = int(threadIdx.x % 32);
  int seen = 0;
  for (int base = 0; base < groups; base += 32) {
    GroupRange r{0, 0};
    if (base + lane < groups) r = clamp_group(offs, base + lane, extent);
    const unsigned live = __ballot_sync(0xffffffffu, r.end > r.begin);
    const int count = __popc(live);
    if (seen + count > n) {
      unsigned bits = live;
      for (int i = 0; i < n - seen; ++i) bits &= bits - 1;  // drop the lower set bits
      const int pos = __ffs(int(bits)) - 1;
      out->begin = __shfl_sync(0xffffffffu, r.begin, pos);
      out->end = __shfl_sync(0xffffffffu, r.end, pos);
      return base + pos;
    }
    seen += count;
  }
  return -1;
}

// Four consecutive floats of the partial tile at `src`, summed over the cluster's CTAs in rank
// order (the same sum whichever CTA adds it); one CTA: its own.
CG_DEVICE void skinny_sum_quad(const float* src, int splits, float (&out)[4]) {
  float4 sum = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  if (splits > 1) {
    for (int q = 0; q < splits; ++q) {
      const float4 v = sm90::ld_shared_cluster_f32x4(src, uint32_t(q));
      sum.x += v.x;
      sum.y += v.y;
      sum.z += v.z;
      sum.w += v.w;
    }
  } else {
    sum = *reinterpret_cast<const float4*>(src);
  }
  out[0] = sum.x;
  out[1] = sum.y;
  out[2] = sum.z;
  out[3] = sum.w;
}

template <typename T, typename Out, int kTok, bool kGrouped = false, bool kWMn = false, bool kSwiGlu = false,
          bool kDeep = false>  // kDeep: the 12-stage ring of the dense 64-token launch (sm90_skinny_stages)
__global__ void __launch_bounds__(sm90_skinny_threads(kTok), 1)
    sm90_skinny_kernel(const __grid_constant__ CUtensorMap tma_w, const __grid_constant__ CUtensorMap tma_x,
                       const GemmArgs g, const int w_hint) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using Smem = Sm90SkinnySmem<T, kTok, kGrouped, kDeep>;
  constexpr int kStages = Smem::kStages;
  constexpr int kRegs = kTok / 2;  // the 64 x kTok fp32 fragment per consumer thread
  constexpr int kRows = sm90_skinny_rows(kTok);
  constexpr int kConsumerThreads = 128 * sm90_skinny_consumers(kTok);
  constexpr int kThreads = sm90_skinny_threads(kTok);
  constexpr uint32_t kStageBytes = (kRows + kTok) * kSm90SkinnyBlockK * sizeof(T);
  constexpr int kLd = sm90_skinny_red_ld(kTok);
  static_assert(kTok * kLd * sizeof(float) <= sizeof(Smem::w) + sizeof(Smem::x), "the partial tile fits the ring");
  static_assert(!kWMn || sm90_skinny_consumers(kTok) == 1, "an MN-major W box holds one warpgroup's 64 rows");
  static_assert(!kSwiGlu || (kGrouped && sm90_skinny_consumers(kTok) == 1), "SwiGLU: the grouped kernel's 64-row tile");
  // SwiGLU: an item is 32 output columns c0.. of D (N / 2 wide); its 64 W rows are gate rows
  // c0..c0+31 and up rows F+c0.. (K-major: one 4-D box with [gate | up] as a dimension of 2;
  // MN-major: two 32-column boxes), so the partial tile holds gate column c in row c - c0 and up
  // column c in row 32 + c - c0.
  constexpr int kItemCols = kSwiGlu ? kRows / 2 : kRows;
  extern __shared__ uint8_t smem_raw[];
  // NOTE: the 128-byte swizzle pattern repeats every 1024 bytes; stages must start on it.
  Smem& s = *reinterpret_cast<Smem*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
  float* red = Smem::kOwnRed ? &s.red[0] : reinterpret_cast<float*>(&s.w[0][0]);

  const int splits = int(gridDim.x);
  const int rank = int(blockIdx.x);  // the cluster spans gridDim.x: rank == cluster_ctarank
  const int k_blocks = ceil_div(g.shape.k, kSm90SkinnyBlockK);
  const int kb_begin = int((long long)k_blocks * rank / splits);
  const int kb_end = int((long long)k_blocks * (rank + 1) / splits);
  // Without a K split the consumers run the epilogue alone and sync only among themselves (named barrier 1): the
  // producer runs ahead to the next item's loads (grouped) or leaves (dense). NOTE: a producer-warp share of the
  // dense epilogue behind a __syncthreads() drew racecheck RAW reports in half the runs (RESULTS.md, sixty-sixth
  // session); without it a full tile takes as many epilogue passes.
  const bool run_ahead = splits == 1;

  // Programmatic dependent launch (arch/sm90_grid_dependency.cuh; sm90_launch_pdl): the next such launch may place
  // its CTAs as this grid's leave their SMs; this grid touches no global memory before its own wait (thread 0 after
  // the barriers' initialisation and the descriptor prefetch, every other thread here, before the grouped tail's
  // offset reads; none returns early).
  sm90::launch_dependents();
  if (threadIdx.x == 0) {
    for (int i = 0; i < kStages; ++i) {
      sm90::mbarrier_init(&s.full[i], 1);
      sm90::mbarrier_init(&s.empty[i], kConsumerThreads / 32);  // one arrive per consumer warp
    }
    sm90::mbarrier_init_fence();
    sm90::tma_prefetch_descriptor(&tma_w);
    sm90::tma_prefetch_descriptor(&tma_x);
  }
  sm90::grid_dependency_wait();
  // Grouped: rows past offs[-1] are in no group and read as zeros; this launch stores them (no
  // separate zeroing kernel). Rows there that a group covers anyway (offsets that decrease) keep
  // the group's values, as if zeroed first. M <= 64: warp 0 checks rows t and t + 32 in lane t.
  int tail_begin = g.shape.m;
  if constexpr (kGrouped) {
    const int32_t* offs = g.shape.offs;
    tail_begin = g.batch > 0 ? min(max(offs[g.batch - 1], 0), g.shape.m) : 0;
    if (tail_begin < g.shape.m && threadIdx.x < 32) {
      uint64_t mask = 0;
      for (int half = 0; half < 2; ++half) {
        const int r = tail_begin + 32 * half + int(threadIdx.x);
        bool zero = r < g.shape.m;
        for (int gi = 0; zero && gi < g.batch; ++gi) {
          const GroupRange q = clamp_group(offs, gi, g.shape.m);
          zero = r < q.begin || r >= q.end;
        }
        mask |= uint64_t(__ballot_sync(0xffffffffu, zero)) << (32 * half);
      }
      if (threadIdx.x == 0) s.tail_zero = mask;
    }
  }
  __syncthreads();
  if constexpr (kGrouped) {
    if (tail_begin < g.shape.m) {  // every CTA takes a share of the tail's elements
      const uint64_t mask = s.tail_zero;
      const int n_out = kSwiGlu ? g.shape.n / 2 : g.shape.n;
      const int64_t total = int64_t(g.shape.m - tail_begin) * n_out;
      const int64_t cta = (int64_t(blockIdx.z) * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
      const int64_t step = int64_t(gridDim.x) * gridDim.y * gridDim.z * kThreads;
      Out* d = static_cast<Out*>(g.d);
      for (int64_t e = cta * kThreads + threadIdx.x; e < total; e += step) {
        const int t = int(e / n_out), col = int(e % n_out);
        if ((mask >> t) & 1u) d[index_t(tail_begin + t) * g.shape.d_sm + index_t(col) * g.shape.d_sn] = from_acc<Out>(0.0f);
      }
    }
  }

  using State = sm90::PipelineState<kStages>;
  const bool producer = threadIdx.x >= kConsumerThreads;
  State st, prev;  // (the producer's and each consumer's ring position, kept across items)
  const int m = g.shape.m, n = g.shape.n;
  const int n_out = kSwiGlu ? n / 2 : n;  // D's columns
  const int row_tiles = kGrouped ? ceil_div(n_out, kItemCols) : int(gridDim.y);
  for (int item = int(blockIdx.z * gridDim.y + blockIdx.y);; item += int(gridDim.y * gridDim.z)) {
    // This item's W rows (D columns) and rows of x and D: the group's (grouped) or all M.
    const int row0 = (kGrouped ? item % row_tiles : int(blockIdx.y)) * kItemCols;  // (first column of D)
    GroupRange rows{0, m};
    int group = 0;
    if constexpr (kGrouped) {
      group = skinny_nth_group(g.shape.offs, g.batch, m, item / row_tiles, &rows);
      if (group < 0) break;  // (uniform over the cluster: its CTAs share blockIdx.y and z)
    }
    if (producer) {
      // Producer: one thread issues every load of the CTA's K range.
      if (threadIdx.x == kConsumerThreads) {
        // W is read once (its rows and K range belong to this CTA): the L2 evict-first policy
        // (w_hint; CUTORCH_GEMM_L2_HINT=off clears it for A/B runs).
        const uint64_t policy = sm90::l2_policy_evict_first();
        for (int kb = kb_begin; kb < kb_end; ++kb) {
          const int k0 = kb * kSm90SkinnyBlockK;
          sm90::mbarrier_wait(&s.empty[st.index], st.phase ^ 1);
          sm90::mbarrier_arrive_expect_tx(&s.full[st.index], kStageBytes);
          // (box coordinates, contiguous one first: K-major W (k, row), MN-major W (row, k))
          const int c0 = kWMn ? row0 : k0, c1 = kWMn ? k0 : row0;
          if constexpr (kSwiGlu && kWMn) {  // gate and up: two 32-column boxes (64-byte swizzle), 4 KB apart
            T* wt = s.w[st.index];
            const int f = g.shape.n / 2;
            if (w_hint) {
              sm90::tma_load_3d_hint(wt, &tma_w, &s.full[st.index], row0, k0, group, policy);
              sm90::tma_load_3d_hint(wt + 32 * kSm90SkinnyBlockK, &tma_w, &s.full[st.index], f + row0, k0, group, policy);
            } else {
              sm90::tma_load_3d(wt, &tma_w, &s.full[st.index], row0, k0, group);
              sm90::tma_load_3d(wt + 32 * kSm90SkinnyBlockK, &tma_w, &s.full[st.index], f + row0, k0, group);
            }
          } else if constexpr (kSwiGlu) {  // K-major: one box (k, col, half, group)
            if (w_hint) sm90::tma_load_4d_hint(s.w[st.index], &tma_w, &s.full[st.index], k0, row0, 0, group, policy);
            else sm90::tma_load_4d(s.w[st.index], &tma_w, &s.full[st.index], k0, row0, 0, group);
          } else if constexpr (kGrouped) {
            if (w_hint) sm90::tma_load_3d_hint(s.w[st.index], &tma_w, &s.full[st.index], c0, c1, group, policy);
            else sm90::tma_load_3d(s.w[st.index], &tma_w, &s.full[st.index], c0, c1, group);
          } else {
            if (w_hint) sm90::tma_load_2d_hint(s.w[st.index], &tma_w, &s.full[st.index], c0, c1, policy);
            else sm90::tma_load_2d(s.w[st.index], &tma_w, &s.full[st.index], c0, c1);
          }
          // (rows past the group's end are other groups' or zeros: computed, never stored)
          sm90::tma_load_2d(s.x[st.index], &tma_x, &s.full[st.index], k0, rows.begin);
          st.advance();
        }
      }
      __syncwarp();
      if (run_ahead) {  // (the consumers store this item)
        if constexpr (kGrouped) continue;
        else break;
      }
    } else {
      // Consumer warpgroups (64 W rows each): 4 k16 steps per stage; a stage goes back to the producer once the
      // next stage's wgmma are issued (wait_group 1: the previous group has read its operands).
      // The first k16 step overwrites the fragment (scale_d = 0); an empty K range (more splits
      // than K blocks) is zeroed after the loop.
      // NOTE: zeroing before the loop on that path made ptxas serialize every wgmma (C7515).
      float acc[kRegs];
      bool have_prev = false;
      for (int kb = kb_begin; kb < kb_end; ++kb) {
        sm90::mbarrier_wait(&s.full[st.index], st.phase);
        // W's stage: K-major [row][64 k] (a warpgroup's 64 rows each), or MN-major [k][64 rows]
        // (SwiGLU, MN-major: two 32-wide MN blocks with the 64-byte swizzle, the up block 4 KB on)
        const uint64_t dw = kWMn ? (kSwiGlu ? sm90::make_desc_mn_major_sw64(s.w[st.index], 32 * kSm90SkinnyBlockK * 2)
                                            : sm90::make_desc_mn_major_sw128(s.w[st.index], kSm90SkinnyBlockK))
                                 : sm90::make_desc_k_major_sw128(s.w[st.index] + (threadIdx.x / 128) * 64 * kSm90SkinnyBlockK);
        constexpr uint64_t kStepW = kWMn ? (kSwiGlu ? sm90::kDescStepK16MNMajorSw64 : sm90::kDescStepK16MNMajor)
                                         : sm90::kDescStepK16KMajor;
        const uint64_t dx = sm90::make_desc_k_major_sw128(s.x[st.index]);
        sm90::wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < kSm90SkinnyBlockK / 16; ++kk) {
          skinny_wgmma<T, kWMn ? 1 : 0>(acc, dw + kk * kStepW, dx + kk * sm90::kDescStepK16KMajor,
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
      // The next item's loads wait for every stage of this one (the last is released here).
      if (kGrouped && have_prev) {
        __syncwarp();
        if (threadIdx.x % 32 == 0) sm90::mbarrier_arrive(&s.empty[prev.index]);
      }
      if (kb_begin == kb_end) {
#pragma unroll
        for (int i = 0; i < kRegs; ++i) acc[i] = 0.0f;
      }
      sm90::fence_accumulators(acc);
      // Every consumer warp's wgmma are done before any warp overwrites the ring with the
      // partial tile, and (grouped) every consumer's epilogue reads of the last item's partial tile
      // are (named barrier 1: the consumer warps).
      asm volatile("bar.sync 1, %0;\n" ::"n"(kConsumerThreads) : "memory");
      // Over the ring (no kOwnRed), the partial tile's generic stores land on bytes whose last accesses were the async
      // proxy's (TMA's writes, wgmma's reads): a proxy fence orders them, as the tile kernels do where they reuse their
      // stages (collective/sm90_ksplit_pair.cuh).
      if constexpr (!Smem::kOwnRed) sm90::fence_proxy_async_shared();
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
    else asm volatile("bar.sync 1, %0;\n" ::"n"(kConsumerThreads) : "memory");  // (run_ahead)

    // Epilogue: quads of 4 D columns; CTA `rank` takes the rank-th share of the rows x kItemCols / 4 quads.
    // Consecutive threads take consecutive quads of one D row (coalesced stores).
    constexpr int kQuads = kItemCols / 4;  // per token
    const int epi_threads = run_ahead ? kConsumerThreads : kThreads;
    const int quads = min(rows.end - rows.begin, kTok) * kQuads;
    const int per = ceil_div(quads, splits);
    const int q_end = min(quads, (rank + 1) * per);
    const float alpha = float(g.alpha), beta = float(g.beta);
    const T* bias = g.bias != nullptr ? static_cast<const T*>(g.bias) + index_t(group) * g.shape.bias_sb : nullptr;
    const T* c_ptr = g.c != nullptr ? static_cast<const T*>(g.c) + index_t(rows.begin) * g.shape.c_sm : nullptr;
    Out* d = static_cast<Out*>(g.d) + index_t(rows.begin) * g.shape.d_sm;
    for (int e = rank * per + int(threadIdx.x); e < q_end; e += epi_threads) {
      const int t = e / kQuads, c4 = 4 * (e % kQuads);
      float part[4], up[4];
      skinny_sum_quad(red + t * kLd + c4, splits, part);
      if constexpr (kSwiGlu) skinny_sum_quad(red + t * kLd + kItemCols + c4, splits, up);
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const int col = row0 + c4 + j;
        if (col >= n_out) break;
        float v;
        if constexpr (kSwiGlu) {  // silu(gate + bias[c]) * (up + bias[F + c]), as the tile kernels' SwiGLU
          const float bg = bias != nullptr ? to_acc<float>(bias[col]) : 0.0f;
          const float bu = bias != nullptr ? to_acc<float>(bias[n_out + col]) : 0.0f;
          v = apply_activation(Activation::kSilu, part[j] + bg) * (up[j] + bu);
        } else {
          v = alpha * part[j];
          if (c_ptr != nullptr) v += beta * to_acc<float>(c_ptr[index_t(t) * g.shape.c_sm + index_t(col) * g.shape.c_sn]);
          if (bias != nullptr) v += to_acc<float>(bias[col]);
          v = apply_activation(g.act, v);
        }
        d[index_t(t) * g.shape.d_sm + index_t(col) * g.shape.d_sn] = from_acc<Out>(v);
      }
    }
    // The peers read this CTA's partial tile (and the next item overwrites it): it stays until
    // every thread of the cluster is done with it. (Without a K split the consumers' barrier
    // before the next item's fragment stores does that.)
    if (splits > 1) sm90::cluster_sync();
    if constexpr (!kGrouped) break;
  }
#endif
}

}  // namespace cutorch_gemm
